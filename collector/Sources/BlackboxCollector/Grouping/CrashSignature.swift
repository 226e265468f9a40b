import BlackboxFormat
import Crypto
import Foundation

/// The key that groups occurrences of the same problem (docs/collector.md, "Grouping").
///
/// Error reports (kind `error`, from `Blackbox.capture`) add `type:<error type>` after the reason
/// class, and their titles lead with the type.
///
/// Version 2 (version 1 left the verbose specialization markers `swift_demangle` writes, such as
/// `generic specialization <Swift.Int> of `, in names, so an inlined standard-library function could
/// pass for the app's): `kind | signal name | reason class | top 3 in-app functions`, where
/// - in-app functions are the symbols (inlined ones included, innermost first) of frames outside the
///   system, the Swift runtime and toolchain libraries, and Blackbox itself;
/// - function names are normalized: no addresses, offsets, generic specialization markers or closure
///   numbers, so two builds of the same code group together;
/// - the reason class is the `Swift runtime failure: …` text when there is one;
/// - with no usable frames (unsymbolicated, or only system frames), the normalized fatal message or
///   reason stands in, then the unsymbolicated image-relative offsets of the top frames.
/// The stored signature is the sha256 of that text; the text itself is the group's title source.
///
/// Frames whose producer marked them as not the app's (`inApp == false`, from a Sentry SDK) are never
/// in-app functions. A Sentry event's `fingerprint` replaces the text: `kind | fingerprint:<values>`,
/// with `{{ default }}` standing for the text above (Sentry's rule).
public enum CrashSignature {
    public static let version = 2

    /// The metadata entry a Sentry event's `fingerprint` travels in, its values joined by the separator.
    static let fingerprintKey = "sentry.fingerprint"
    static let fingerprintSeparator = "\u{1F}"

    public struct Result: Sendable, Equatable {
        public var hash: String
        public var text: String
        public var title: String
    }

    static let maxTitleCharacters = 300

    public static func compute(_ report: CrashReport) -> Result {
        let functions = inAppFunctions(report, limit: 3)
        var parts = [report.kind.rawValue, report.signal?.name ?? "-"]
        let runtimeFailure = report.frames.first?.symbols.first { $0.function.hasPrefix("Swift runtime failure: ") }
        parts.append(runtimeFailure?.function ?? "-")
        // Captured errors group by their type too: two errors thrown from one handler are two problems.
        // (A part only error reports have: crash signatures stay as they were.)
        let errorType = report.kind == .error ? report.metadata["error.type"] ?? "?" : nil
        if let errorType { parts.append("type:" + errorType) }
        let what = errorType ?? report.signal?.name ?? report.kind.rawValue
        let title: String
        if !functions.isEmpty {
            parts += functions
            title = "\(what) in \(functions[functions.startIndex])"
        } else if let message = report.reason ?? report.fatalMessage {
            let normalized = normalizeMessage(message)
            parts.append("message:" + normalized)
            title = "\(what): \(normalized.prefix(120))"
        } else {
            let offsets = report.frames.prefix(3).map { frame in
                let image = report.image(of: frame)
                let name = image.map { String($0.path.split(separator: "/").last ?? "") } ?? "?"
                return "\(name)+\(frame.imageOffset ?? "?")"
            }
            parts += offsets
            title = "\(what) at \(offsets.first ?? "unknown location")"
        }
        var text = parts.joined(separator: " | ")
        if let fingerprint = report.metadata[Self.fingerprintKey] {
            let values = fingerprint.components(separatedBy: Self.fingerprintSeparator).map {
                $0 == "{{ default }}" || $0 == "{{default}}" ? text : $0
            }
            text = [report.kind.rawValue, "fingerprint:" + values.joined(separator: " | ")].joined(separator: " | ")
        }
        let hash = SHA256.hash(data: Data(("v\(version)|" + text).utf8)).lowercaseHex
        // The title is for lists: a function name of megabytes must not make every page that large.
        let shownTitle = title.count > Self.maxTitleCharacters ? title.prefix(Self.maxTitleCharacters) + "…" : title
        return Result(hash: hash, text: text, title: shownTitle)
    }

    /// The first `limit` distinct in-app functions, innermost first (normalizing a name is regular
    /// expressions: a deep stack is not normalized past what the signature uses).
    static func inAppFunctions(_ report: CrashReport, limit: Int = .max) -> [String] {
        var functions: [String] = []
        for frame in report.frames where functions.count < limit && frame.inApp != false {
            let image = report.image(of: frame)?.path
            if let image, InAppRules.isSystemImage(image) { continue }
            for symbol in frame.symbols where !symbol.function.hasPrefix("Swift runtime failure") {
                let name = normalizeFunction(symbol.function)
                // The producer's word (a Sentry SDK's `in_app`) outranks the name rules, which are
                // about Swift and C (a Python module `__main__` is the app's).
                if frame.inApp != true, InAppRules.isExcludedFunction(name) { continue }
                if functions.last != name { functions.append(name) }
                if functions.count == limit { break }
            }
        }
        return functions
    }

    /// `specialized closure #2 (Swift.Int) -> () in app.run(x: Swift.Int) -> ()` → `closure in app.run(x:)`.
    static func normalizeFunction(_ name: String) -> String {
        var result = InAppRules.withoutSpecializationMarkers(name)
        for marker in ["specialized ", "merged ", "static ", "@objc ", "outlined "] {
            result = result.replacingOccurrences(of: marker, with: "")
        }
        result = result.replacingOccurrences(of: #"closure #\d+"#, with: "closure", options: .regularExpression)
        result = result.replacingOccurrences(
            of: #"implicit closure #\d+"#, with: "closure", options: .regularExpression)
        // Drop parameter types and return types: `f(x: Swift.Int) -> Swift.Int` → `f(x:)`.
        result = result.replacingOccurrences(
            of: #"\(([^()]*?)\)( -> [^ ]+)?"#, with: "(…)", options: .regularExpression)
        result = result.replacingOccurrences(of: #"0x[0-9a-fA-F]+"#, with: "", options: .regularExpression)
        result = result.replacingOccurrences(of: #" \+ \d+$"#, with: "", options: .regularExpression)
        return result.trimmingCharacters(in: .whitespaces)
    }

    /// Numbers, hex and quoted values vary between occurrences of the same problem.
    static func normalizeMessage(_ message: String) -> String {
        var result = message.split(separator: "\n").first.map(String.init) ?? ""
        result = result.replacingOccurrences(of: #"0x[0-9a-fA-F]+"#, with: "0x_", options: .regularExpression)
        result = result.replacingOccurrences(of: #"\d+"#, with: "N", options: .regularExpression)
        result = result.replacingOccurrences(of: #""[^"]*""#, with: "\"_\"", options: .regularExpression)
        return result
    }
}
