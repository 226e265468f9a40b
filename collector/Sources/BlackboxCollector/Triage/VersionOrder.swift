import Foundation

/// Which of two app versions is newer, for regressions: by semantic version where both parse
/// (`1.2`, `v1.10.0`, `2.0.0-beta.1`; missing parts are 0, a pre-release sorts before its release,
/// build metadata is ignored), and otherwise by when the collector first saw each version.
public struct SemanticVersion: Comparable, Sendable {
    var numbers: [Int]
    var preRelease: [String]

    public init?(_ text: String) {
        var text = Substring(text.trimmingCharacters(in: .whitespaces))
        if text.first == "v" || text.first == "V" { text = text.dropFirst() }
        text = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard let core = parts.first, !core.isEmpty else { return nil }
        var numbers: [Int] = []
        for component in core.split(separator: ".", omittingEmptySubsequences: false) {
            guard !component.isEmpty, component.count <= 9, component.allSatisfy(\.isASCII),
                let number = Int(component), number >= 0
            else { return nil }
            numbers.append(number)
        }
        guard numbers.count <= 4 else { return nil }
        self.numbers = numbers
        self.preRelease = parts.count == 2 ? parts[1].split(separator: ".").map(String.init) : []
    }

    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        let width = max(lhs.numbers.count, rhs.numbers.count)
        let left = lhs.numbers + Array(repeating: 0, count: width - lhs.numbers.count)
        let right = rhs.numbers + Array(repeating: 0, count: width - rhs.numbers.count)
        if left != right { return left.lexicographicallyPrecedes(right) }
        switch (lhs.preRelease.isEmpty, rhs.preRelease.isEmpty) {
        case (true, _): return false
        case (false, true): return true
        case (false, false):
            return lhs.preRelease.lexicographicallyPrecedes(rhs.preRelease) { a, b in
                switch (Int(a), Int(b)) {
                case (let x?, let y?): x < y
                case (_?, nil): true
                case (nil, _?): false
                case (nil, nil): a < b
                }
            }
        }
    }

    public static func == (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool { !(lhs < rhs) && !(rhs < lhs) }
}

/// Orders versions as `SemanticVersion` describes; `firstSeen` answers for versions that do not
/// parse (nil: the collector has not seen it).
struct VersionOrder {
    var firstSeen: (String) -> Date?

    /// Whether `version` is at or above `bound`. A version with no first-seen time compares as the newest
    /// there is (it appeared after everything the collector knows), so an unseen bound is reached only by
    /// a version first seen after the bound was set (`boundSetAt`).
    func isAtLeast(_ version: String, _ bound: String, boundSetAt: Date) -> Bool {
        if let left = SemanticVersion(version), let right = SemanticVersion(bound) { return left >= right }
        if version == bound { return true }
        guard let seen = firstSeen(version) else { return true }
        guard let boundSeen = firstSeen(bound) else { return seen > boundSetAt }
        return seen >= boundSeen
    }

    /// Whether `version` is strictly above `bound` (for "resolved in the next version").
    func isAbove(_ version: String, _ bound: String, boundSetAt: Date) -> Bool {
        version != bound && isAtLeast(version, bound, boundSetAt: boundSetAt)
            && !(SemanticVersion(version).flatMap { left in SemanticVersion(bound).map { left == $0 } } ?? false)
    }
}
