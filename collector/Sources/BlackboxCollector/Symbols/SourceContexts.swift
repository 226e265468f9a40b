import BlackboxFormat
import Foundation
import Logging
import NIOPosix

/// Source files from the project's source bundles (`SourceBundle`), by build-id and the absolute path
/// the debug info names: whole for debuginfod's `source` route, or as the lines around the app's
/// frames for the report page.
struct SourceContexts {
    let index: any SymbolIndex
    let blobs: any BlobStorage
    var logger = Logger(label: "collector.sources")

    /// Lines shown before and after a frame's line.
    static let linesAround = 5
    /// The app's frames given context on one page: the top of each stack is what people read.
    static let maxFrames = 64
    /// A longer line is cut (a minified or generated file).
    static let maxLineLength = 400

    /// The source file, or nil when the project has no source bundle for the build-id, or none with
    /// that path.
    func source(buildID: String, path: String, in scope: ProjectScope) async throws -> Data? {
        guard let bundle = try await index.symbolFiles(buildIDs: [buildID], in: scope).first(where: \.hasSources)
        else { return nil }
        return try await blobs.withLocalFile(of: bundle.blob) { file in
            try await NIOThreadPool.singleton.runIfActive { try SourceBundle(path: file).source(at: path) }
        }
    }

    /// The report with source context on the app's frames that have a file and line in an image
    /// whose source bundle the project has (frames that came with context keep theirs). A bundle that
    /// cannot be read leaves the report as it was: the page shows the frames without.
    func filled(_ report: CrashReport, in scope: ProjectScope) async -> CrashReport {
        let appCode = AppCode(report)
        var wanted: [String: Set<String>] = [:]
        var counted = 0
        for frame in report.stacks.joined() where counted < Self.maxFrames {
            guard frame.sourceContext == nil, let place = place(of: frame, in: report, appCode: appCode) else {
                continue
            }
            wanted[place.buildID, default: []].insert(place.path)
            counted += 1
        }
        guard !wanted.isEmpty else { return report }
        var lines: [String: [String: [Substring]]] = [:]
        do {
            let bundles = try await index.symbolFiles(buildIDs: wanted.keys.sorted(), in: scope).filter(\.hasSources)
            for bundle in bundles where lines[bundle.buildID] == nil {
                let paths = wanted[bundle.buildID] ?? []
                lines[bundle.buildID] = try await blobs.withLocalFile(of: bundle.blob) { file in
                    try await NIOThreadPool.singleton.runIfActive { try Self.read(paths, from: file) }
                }
            }
        } catch {
            logger.warning("no source context: \(error)")
            return report
        }
        var filled = report
        func fill(_ frames: inout [CrashReport.Frame]) {
            for index in frames.indices where frames[index].sourceContext == nil {
                guard let place = place(of: frames[index], in: report, appCode: appCode),
                    let file = lines[place.buildID]?[place.path]
                else { continue }
                frames[index].sourceContext = Self.context(file, line: place.line)
            }
        }
        fill(&filled.frames)
        if var threads = filled.threads {
            for index in threads.indices { fill(&threads[index].frames) }
            filled.threads = threads
        }
        return filled
    }

    /// Where an app frame's outermost symbol is (the row the page shows context under).
    private func place(of frame: CrashReport.Frame, in report: CrashReport, appCode: AppCode) -> (
        buildID: String, path: String, line: Int
    )? {
        guard let symbol = frame.symbols.last, let path = symbol.file, path.hasPrefix("/"), let line = symbol.line,
            line > 0, appCode.isApp(symbol, of: frame), let buildID = report.image(of: frame)?.buildID
        else { return nil }
        return (buildID, path, line)
    }

    /// Each path's lines, for the paths the bundle has.
    private static func read(_ paths: Set<String>, from file: String) throws -> [String: [Substring]] {
        let bundle = try SourceBundle(path: file)
        var lines: [String: [Substring]] = [:]
        for path in paths {
            guard let source = try? bundle.source(at: path) else { continue }
            lines[path] = String(decoding: source, as: UTF8.self).split(
                separator: "\n", omittingEmptySubsequences: false)
        }
        return lines
    }

    /// `linesAround` lines each side of `line` (1-based); nil when the file is shorter than that.
    static func context(_ lines: [Substring], line: Int) -> CrashReport.SourceContext? {
        guard line >= 1, line <= lines.count else { return nil }
        func cut(_ text: Substring) -> String {
            String(text.prefix(maxLineLength)).replacingOccurrences(of: "\r", with: "")
        }
        let index = line - 1
        return CrashReport.SourceContext(
            before: lines[max(0, index - linesAround)..<index].map(cut), line: cut(lines[index]),
            after: lines[(index + 1)..<min(lines.count, index + 1 + linesAround)].map(cut))
    }
}
