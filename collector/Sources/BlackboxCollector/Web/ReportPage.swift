import BlackboxFormat
import Foundation

/// What a report page shows of a report: a headline that tells the story (the reason, then where in
/// the app), and frame rows with the app's own code first.
enum ReportPage {
    /// `Index out of range in closure #3 in hummingbird_service`: the reason without the standard
    /// library's file and line, then the first frame of the app's own code (Sentry's "culprit"); the
    /// signal stands in for a missing reason.
    static func headline(_ report: CrashReport) -> String {
        var reason = report.reason ?? report.fatalMessage.flatMap { $0.split(separator: "\n").first.map(String.init) }
        if let text = reason, let range = text.range(of: "Fatal error: ") {
            let message = text[range.upperBound...].trimmingCharacters(in: .whitespaces)
            reason = message.isEmpty ? "Fatal error" : message
        }
        if let text = reason, text.hasPrefix("Swift runtime failure: ") {
            reason = String(text.dropFirst("Swift runtime failure: ".count))
        }
        let what = reason ?? report.signal?.name ?? report.kind.rawValue
        guard let culprit = culprit(report) else { return what }
        return "\(what) in \(culprit)"
    }

    /// The simplified name of the innermost frame of the app's own code.
    static func culprit(_ report: CrashReport) -> String? {
        for frame in report.frames {
            for symbol in frame.symbols where isApp(symbol, of: frame, in: report) {
                return SwiftNames.simplified(symbol.function)
            }
        }
        return nil
    }

    /// A symbol of the app's own code: as its producer says (a Sentry SDK's `in_app`), else in one of
    /// the app's images (not the system's, not an unknown one) and `isAppCode`. The headline's culprit
    /// and the frame rows' `app` use this one rule.
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

    /// One row per symbol (inlined ones included), each with its simplified name and full signature;
    /// the app's own frames marked `app`, runtime, system and thunk frames `glue`. Each run of glue
    /// rows is preceded by a summary row that stands for it while the page shows the app's frames only.
    static func frameRows(_ frames: [CrashReport.Frame], in report: CrashReport) -> [[String: Any]] {
        var rows: [[String: Any]] = []
        var glueRun: [[String: Any]] = []
        func endGlueRun() {
            guard !glueRun.isEmpty else { return }
            let count = glueRun.count
            rows.append(["summary": "\(count) runtime, library and thunk frame\(count == 1 ? "" : "s")"])
            rows += glueRun
            glueRun = []
        }
        for frame in frames {
            let imageName = report.image(of: frame).map { String($0.path.split(separator: "/").last ?? "") } ?? "?"
            var symbolRows: [(function: String, short: String, location: String, inlined: Bool, app: Bool)] = []
            if frame.symbols.isEmpty {
                let name = frame.imageOffset.map { "\(imageName) + \($0)" } ?? "?"
                symbolRows.append((name, name, "", false, false))
            }
            for symbol in frame.symbols {
                let marker = frame.asyncResume == true && symbol == frame.symbols.first ? "[async] " : ""
                let location =
                    symbol.file.map { "\($0)\(symbol.line.map { ":\($0)" } ?? "")" }
                    ?? (frame.symbolication == .symbolTable ? "(symbol table)" : "")
                symbolRows.append(
                    (
                        marker + symbol.function, marker + SwiftNames.simplified(symbol.function), location,
                        symbol.inlined, isApp(symbol, of: frame, in: report)
                    ))
            }
            for row in symbolRows {
                let isApp = row.app
                let values: [String: Any] = [
                    "index": frame.index, "image": imageName, "address": frame.address, "function": row.function,
                    "short": row.short, "location": row.location, "inlined": row.inlined,
                    "kind": isApp ? "app" : "glue",
                ]
                if isApp {
                    endGlueRun()
                    rows.append(values)
                } else {
                    glueRun.append(values)
                }
            }
        }
        endGlueRun()
        return rows
    }
}
