import BlackboxFormat

/// Which frames of a report are the app's own code: the one rule for a group's culprit, its signature
/// and the report page's emphasis.
struct AppCode {
    let report: CrashReport
    /// Modules of packages the app depends on, learned from this report's frames whose debug info
    /// places them under `.build/checkouts/<package>/Sources/<module>/`. A symbol of such a module
    /// is not the app's even where its own debug info has no file (an optimized async resume
    /// function, named from the symbol table or by its object file only).
    let dependencyModules: Set<String>

    init(_ report: CrashReport) {
        self.report = report
        var modules = Set<String>()
        for frame in report.stacks.joined() {
            for symbol in frame.symbols {
                if let module = symbol.file.flatMap(Self.checkoutModule) { modules.insert(module) }
            }
        }
        dependencyModules = modules
    }

    /// The innermost symbol of the app's own code (Sentry's "culprit") in `frames` (the crashed
    /// thread's by default), inlined ones included. Only the top frames are searched: a culprit below
    /// them would say little about the crash, and each rejected symbol costs a name normalization, so
    /// an unbounded search is a cost an uploader chooses (security review 2026-11-27, finding 1).
    func culprit(in frames: [CrashReport.Frame]? = nil) -> CrashReport.Symbol? {
        for frame in (frames ?? report.frames).prefix(Self.maxCulpritFrames) {
            if let symbol = frame.symbols.prefix(Self.maxCulpritSymbolsPerFrame).first(where: { isApp($0, of: frame) })
            {
                return symbol
            }
        }
        return nil
    }

    static let maxCulpritFrames = 128
    static let maxCulpritSymbolsPerFrame = 16

    /// A symbol of the app's own code: as its producer says (a Sentry SDK's `in_app`), else in one of
    /// the app's images (not the system's, not an unknown one), `isAppCode`, and not of a dependency's
    /// module.
    func isApp(_ symbol: CrashReport.Symbol, of frame: CrashReport.Frame) -> Bool {
        if let inApp = frame.inApp { return inApp }
        guard let image = report.image(of: frame), !InAppRules.isSystemImage(image.path) else { return false }
        guard Self.isAppCode(symbol.function, file: symbol.file ?? "") else { return false }
        guard !dependencyModules.isEmpty, let module = Self.definingModule(of: symbol.function) else { return true }
        return !dependencyModules.contains(module)
    }

    /// The app's own code: not the runtime, Blackbox or compiler-made glue (thunks, forwarders,
    /// witnesses: by name, or `<compiler-generated>` as their file), and not a package the app depends
    /// on (SwiftPM builds those from `.build/checkouts/`, so their debug info says so).
    static func isAppCode(_ function: String, file: String) -> Bool {
        !InAppRules.isGlueOrDependency(function, file: file)
            && !InAppRules.isExcludedFunction(SwiftNames.simplified(function))
            && !InAppRules.isExcludedFunction(CrashSignature.normalizeFunction(function))
    }

    /// `…/.build/checkouts/hummingbird/Sources/HummingbirdCore/Server/Server.swift` → `HummingbirdCore`
    /// (any build folder: `InAppRules.dependencyCheckout`).
    static func checkoutModule(_ file: String) -> String? {
        guard let packagePath = InAppRules.dependencyCheckout(in: file) else { return nil }
        let parts = file[packagePath...].split(separator: "/")
        guard parts.count > 3, parts[1] == "Sources" else { return nil }
        return String(parts[2])
    }

    /// The module of the outermost named context of a demangled name:
    /// `closure #1 in closure #2 in HummingbirdCore.Server.run()` → `HummingbirdCore`.
    static func definingModule(of function: String) -> String? {
        var name = Substring(SwiftNames.simplified(function))
        if let context = name.range(of: " in ", options: .backwards) { name = name[context.upperBound...] }
        if name.hasPrefix("static ") { name = name.dropFirst("static ".count) }
        guard let dot = name.firstIndex(of: "."), dot > name.startIndex else { return nil }
        let module = name[..<dot]
        guard module.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
        return String(module)
    }
}
