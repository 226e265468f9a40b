import BlackboxFormat

/// Which frames are the app's own code: the one rule for a group's culprit, its signature and the
/// report page's emphasis.
enum AppCode {
    /// The innermost symbol of the app's own code (Sentry's "culprit"), inlined ones included.
    static func culprit(_ report: CrashReport) -> CrashReport.Symbol? {
        for frame in report.frames {
            if let symbol = frame.symbols.first(where: { isApp($0, of: frame, in: report) }) { return symbol }
        }
        return nil
    }

    /// A symbol of the app's own code: as its producer says (a Sentry SDK's `in_app`), else in one of
    /// the app's images (not the system's, not an unknown one) and `isAppCode`.
    static func isApp(_ symbol: CrashReport.Symbol, of frame: CrashReport.Frame, in report: CrashReport) -> Bool {
        if let inApp = frame.inApp { return inApp }
        guard let image = report.image(of: frame), !InAppRules.isSystemImage(image.path) else { return false }
        return isAppCode(symbol.function, file: symbol.file ?? "")
    }

    /// The app's own code: not the runtime, Blackbox or compiler-made glue (thunks, forwarders,
    /// witnesses: by name, or `<compiler-generated>` as their file), and not a package the app depends
    /// on (SwiftPM builds those from `.build/checkouts/`, so their debug info says so).
    static func isAppCode(_ function: String, file: String) -> Bool {
        !InAppRules.isGlueOrDependency(function, file: file)
            && !InAppRules.isExcludedFunction(SwiftNames.simplified(function))
            && !InAppRules.isExcludedFunction(CrashSignature.normalizeFunction(function))
    }
}
