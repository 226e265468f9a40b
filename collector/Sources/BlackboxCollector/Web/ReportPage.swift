import BlackboxFormat
import Foundation

/// What a report page shows of a report's frames: the app's own code first.
enum ReportPage {
    /// One row per symbol (inlined ones included), each with its simplified name and full signature;
    /// the app's own frames marked `app`, runtime, system and thunk frames `glue`. Each run of glue
    /// rows is preceded by a summary row that stands for it while the page shows the app's frames only.
    static func frameRows(_ frames: [CrashReport.Frame], in report: CrashReport, appCode: AppCode) -> [[String: Any]] {
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
                        symbol.inlined, appCode.isApp(symbol, of: frame)
                    ))
            }
            for (position, row) in symbolRows.enumerated() {
                let isApp = row.app
                var values: [String: Any] = [
                    "index": frame.index, "image": imageName, "address": frame.address, "function": row.function,
                    "short": row.short, "location": row.location, "inlined": row.inlined,
                    "kind": isApp ? "app" : "glue",
                ]
                // Under the frame's outermost row: the lines the producer sent around its line. False,
                // not absent: Mustache would look an absent name up in the enclosing context.
                values["hasContext"] = false
                if position == symbolRows.count - 1, let context = frame.sourceContext {
                    values["hasContext"] = true
                    values["context"] = sourceLines(context, line: frame.symbols.last?.line)
                }
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

    /// The context's lines, numbered when the frame's line is known, its own line marked.
    static func sourceLines(_ context: CrashReport.SourceContext, line: Int?) -> [[String: Any]] {
        let lines = context.before + [context.line] + context.after
        let first = line.map { $0 - context.before.count }
        return lines.enumerated().map { offset, text in
            [
                "number": first.map { String($0 + offset) } ?? "", "text": text,
                "current": offset == context.before.count,
            ]
        }
    }

    /// Whether any frame has a machine address (native code): a report of an interpreted language's
    /// frames (through the Sentry protocol) has neither addresses nor images to show.
    static func hasAddresses(_ report: CrashReport) -> Bool {
        !report.images.isEmpty || report.stacks.joined().contains { $0.imageIndex != nil || $0.address != "0x0" }
    }
}
