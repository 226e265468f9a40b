/// Which frames are the app's own code: the one rule set behind the collector's grouping
/// (`CrashSignature`), its report page, and the `in_app` flag Blackbox sends to Sentry. Names are
/// demangled Swift or C names; the callers normalize them to the depth they need.
public enum InAppRules {
    /// The system's, the toolchain's and the Swift runtime's libraries, and the kernel's pseudo-images.
    public static func isSystemImage(_ path: String) -> Bool {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        if path.hasPrefix("/lib/") || path.hasPrefix("/lib64/") || path.hasPrefix("/usr/lib/") || path.hasPrefix("[") {
            return true
        }
        if UTF8Search.contains("/usr/lib/swift/", in: path) { return true }  // a toolchain or runtime directory
        return name.hasPrefix("libswift") || name.hasPrefix("libFoundation") || name.hasPrefix("libdispatch")
            || name.hasPrefix("lib_Foundation") || name.hasPrefix("libBlocksRuntime")
    }

    /// The runtime's, the standard library's, Foundation's and Blackbox's own functions, and
    /// compiler-made thunks, by a (normalized) name.
    public static func isExcludedFunction(_ name: String) -> Bool {
        let excludedPrefixes = [
            "swift_", "_swift_", "__", "Swift.", "Foundation.", "Dispatch.", "Blackbox.", "BlackboxErrors.",
            "BlackboxHummingbird.", "BlackboxVapor.",
            "bbx_crash", "_assertionFailure", "reabstraction thunk", "partial apply", "thunk for",
        ]
        if excludedPrefixes.contains(where: { name.hasPrefix($0) }) { return true }
        // Blackbox's own entry points, however they were demangled.
        return ["ensure(", "bug(", "unreachable(", "NonFatalReporter.", "AssertionFailure."].contains {
            name.hasPrefix($0)
        }
            || (name.hasPrefix("closure") || name.hasPrefix("implicit closure"))
                && blackboxModules.contains {
                    UTF8Search.contains(" in \($0).", in: name) || UTF8Search.contains(" in static \($0).", in: name)
                }
    }

    static let blackboxModules = ["Blackbox", "BlackboxErrors", "BlackboxHummingbird", "BlackboxVapor"]

    /// Compiler-made glue, wherever it sits in a name.
    public static let glueMarkers = [
        "protocol witness for ", "partial apply forwarder for ", "reabstraction thunk", "thunk for ",
        "dispatch thunk of ", "outlined ",
    ]

    /// Glue by name, `<compiler-generated>` as its file, a package the app depends on (SwiftPM builds
    /// those from its build folder's `checkouts/`, so their debug info says so) or the runtime's
    /// failure marker.
    public static func isGlueOrDependency(_ function: String, file: String) -> Bool {
        dependencyCheckout(in: file) != nil || UTF8Search.contains("<compiler-generated>", in: file)
            || glueMarkers.contains { UTF8Search.contains($0, in: function) }
            || function.hasPrefix("Swift runtime failure")
    }

    /// Where the package path begins in a source file of a package the app depends on: after the
    /// `checkouts/` of a SwiftPM build folder — `.build/`, any `.build*` (`.build-release/`), or any
    /// `--scratch-path` (then `checkouts/<package>/Sources/` says so). Nil for the app's own files (a
    /// folder of the app's called `checkouts` holds no `<package>/Sources/`).
    public static func dependencyCheckout(in file: String) -> String.Index? {
        var rest = file.startIndex..<file.endIndex
        while let found = UTF8Search.firstRange(of: "/checkouts/", in: file[rest]) {
            let parent = file[..<found.lowerBound].split(separator: "/").last ?? ""
            let package = file[found.upperBound...].split(separator: "/", maxSplits: 2)
            if parent.hasPrefix(".build") || (package.count == 3 && package[1] == "Sources") {
                return found.upperBound
            }
            rest = found.upperBound..<file.endIndex
        }
        return nil
    }

    /// `generic specialization <Swift.Array<Swift.Int>> of Swift.Array.count` → `Swift.Array.count`
    /// (also `function signature specialization <…> of `), however deeply the brackets nest. Linear in
    /// the name: each marker's next occurrence is searched for again only once the text has passed it.
    public static func withoutSpecializationMarkers(_ name: String) -> String {
        var result = Substring(name)
        var output = ""
        let markers = ["generic specialization <", "function signature specialization <"]
        var next = markers.map { UTF8Search.firstRange(of: $0, in: result) }
        while let marker = next.compactMap({ $0 }).min(by: { $0.lowerBound < $1.lowerBound }) {
            output += result[..<marker.lowerBound]
            var depth = 1
            var index = marker.upperBound
            while index < result.endIndex && depth > 0 {
                if result[index] == "<" { depth += 1 } else if result[index] == ">" { depth -= 1 }
                index = result.index(after: index)
            }
            result = result[index...]
            if result.hasPrefix(" of ") { result = result.dropFirst(4) }
            for (position, marker) in markers.enumerated() {
                if let found = next[position], found.lowerBound >= result.startIndex { continue }
                next[position] = next[position] == nil ? nil : UTF8Search.firstRange(of: marker, in: result)
            }
        }
        return output + result
    }

    /// The app's own code by the rules alone, for a producer that must decide without the
    /// collector's full name normalization (the Sentry mapping): a symbol in a non-system image that
    /// is neither glue nor excluded once its compiler prefixes are dropped.
    public static func isAppSymbol(function: String, file: String?, imagePath: String?) -> Bool {
        guard let imagePath, !isSystemImage(imagePath) else { return false }
        guard !isGlueOrDependency(function, file: file ?? "") else { return false }
        var name = Substring(withoutSpecializationMarkers(function))
        var stripped = true
        while stripped {
            stripped = false
            for prefix in ["specialized ", "merged ", "static ", "@objc "] where name.hasPrefix(prefix) {
                name = name.dropFirst(prefix.count)
                stripped = true
            }
        }
        return !isExcludedFunction(String(name))
    }
}
