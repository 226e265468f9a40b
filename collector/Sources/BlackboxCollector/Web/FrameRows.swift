import BlackboxFormat
import Foundation

/// A row of a report page's frame table: one symbol of a frame (inlined ones get their own), or the
/// summary that stands for a run of glue rows while the page shows the app's frames only.
struct FrameRow: Encodable {
    /// One line of the source the producer sent around the frame's line.
    struct SourceLine: Encodable {
        let number: String
        let text: String
        let current: Bool
    }

    /// Set on a summary row only (whose other values are never shown).
    var summary: String? = nil
    var index = 0
    var image = ""
    var address = ""
    var function = ""
    var short = ""
    var location = ""
    var inlined = false
    /// `app` for the app's own code, `glue` for runtime, library and thunk frames.
    var kind = "glue"
    var hasContext = false
    var context: [SourceLine] = []

    /// The rows of a stack: the app's own frames first-class, each run of glue rows after a summary.
    static func rows(_ frames: [CrashReport.Frame], in report: CrashReport, appCode: AppCode) -> [FrameRow] {
        var rows: [FrameRow] = []
        var glueRun: [FrameRow] = []
        func endGlueRun() {
            guard !glueRun.isEmpty else { return }
            let count = glueRun.count
            rows.append(FrameRow(summary: "\(count) runtime, library and thunk frame\(count == 1 ? "" : "s")"))
            rows += glueRun
            glueRun = []
        }
        for frame in frames {
            let imageName = report.image(of: frame).map { String($0.path.split(separator: "/").last ?? "") } ?? "?"
            var symbolRows: [FrameRow] = []
            if frame.symbols.isEmpty {
                let name = frame.imageOffset.map { "\(imageName) + \($0)" } ?? "?"
                symbolRows.append(FrameRow(function: name, short: name))
            }
            for symbol in frame.symbols {
                let marker = frame.asyncResume == true && symbol == frame.symbols.first ? "[async] " : ""
                let location =
                    symbol.file.map { "\($0)\(symbol.line.map { ":\($0)" } ?? "")" }
                    ?? (frame.symbolication == .symbolTable ? "(symbol table)" : "")
                symbolRows.append(
                    FrameRow(
                        function: marker + symbol.function, short: marker + SwiftNames.simplified(symbol.function),
                        location: location, inlined: symbol.inlined,
                        kind: appCode.isApp(symbol, of: frame) ? "app" : "glue"))
            }
            for position in symbolRows.indices {
                var row = symbolRows[position]
                row.index = frame.index
                row.image = imageName
                row.address = frame.address
                // Under the frame's outermost row: the lines the producer sent around its line.
                if position == symbolRows.count - 1, let context = frame.sourceContext {
                    row.hasContext = true
                    row.context = sourceLines(context, line: frame.symbols.last?.line)
                }
                if row.kind == "app" {
                    endGlueRun()
                    rows.append(row)
                } else {
                    glueRun.append(row)
                }
            }
        }
        endGlueRun()
        return rows
    }

    /// The context's lines, numbered when the frame's line is known, its own line marked.
    static func sourceLines(_ context: CrashReport.SourceContext, line: Int?) -> [SourceLine] {
        let lines = context.before + [context.line] + context.after
        let first = line.map { $0 - context.before.count }
        return lines.enumerated().map { offset, text in
            SourceLine(
                number: first.map { String($0 + offset) } ?? "", text: text, current: offset == context.before.count)
        }
    }

    /// Whether any frame has a machine address (native code): a report of an interpreted language's
    /// frames (through the Sentry protocol) has neither addresses nor images to show.
    static func hasAddresses(_ report: CrashReport) -> Bool {
        !report.images.isEmpty || report.stacks.joined().contains { $0.imageIndex != nil || $0.address != "0x0" }
    }
}
