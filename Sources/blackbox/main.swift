import ArgumentParser
import Blackbox
import BlackboxFormat
import Foundation

/// The `blackbox` command. Exit status: 0 success, 1 a problem with the input (a file that is missing
/// or not what it should be), 64 a usage error.
@main
struct BlackboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blackbox",
        abstract: "Read Blackbox crash reports and log files.",
        discussion: "Bundling and uploading to a collector are not in this version yet.",
        subcommands: [Show.self, Logs.self])
}

/// A problem with what the user pointed at: one clear line, exit status 1, never a stack trace.
struct InputProblem: Error, CustomStringConvertible {
    var description: String
}

extension ParsableCommand {
    static func failing(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("blackbox: \(message)\n".utf8))
        return ExitCode(1)
    }
}

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a crash report as a crash log.",
        discussion: """
            REPORT is a processed report (outbox/*.json) or a raw one (crashes/pending/*.raw). A raw report \
            is symbolicated here with llvm-symbolizer against the binaries at the paths it names, after \
            checking their build-ids.
            """)

    @Argument(help: "The report file.") var report: String
    @Flag(help: "Print the report as JSON instead of text.") var json = false
    @Option(help: "llvm-symbolizer to use for raw reports.") var symbolizer: String?

    func run() throws {
        let parsed: CrashReport
        do {
            parsed = try load()
        } catch {
            throw Self.failing("\(report): \(error)")
        }
        if json {
            let data = try CrashReport.makeEncoder().encode(parsed)
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(parsed.textRendering.utf8))
        }
    }

    private func load() throws -> CrashReport {
        guard FileManager.default.fileExists(atPath: report) else { throw InputProblem(description: "no such file") }
        if report.hasSuffix(".raw") || report.hasSuffix(".raw.processing") {
            return try CrashReportProcessor.report(fromRawFile: report, symbolizerPath: symbolizer)
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: report))
        do {
            return try CrashReport.decode(data)
        } catch let problem as CrashReport.DecodingProblem {
            throw problem
        } catch {
            throw InputProblem(description: "not a Blackbox crash report (\(error.localizedDescription))")
        }
    }
}

struct Logs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print log files, gzip archives included, oldest first.",
        discussion: """
            PATH is a diagnostics directory (its logs/ folder is read), a logs folder, or log files. \
            Archives (<base>.<start>--<end>.log[.gz]) come before the active file. Filters apply to lines \
            in Blackbox's text and JSON Lines formats; other lines are kept.
            """)

    @Argument(help: "Directories or files.") var paths: [String]
    @Option(help: "Only lines at this level or above (trace, debug, info, notice, warning, error, critical).")
    var level: String?
    @Option(help: "Only lines whose label starts with this.") var label: String?

    static let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
    static let textTags = ["TRACE": 0, "DEBUG": 1, "INFO": 2, "NOTE": 3, "WARN": 4, "ERROR": 5, "CRIT": 6]

    func validate() throws {
        if let level, !Self.levels.contains(level.lowercased()) {
            throw ValidationError("--level must be one of \(Self.levels.joined(separator: ", ")), got \(level)")
        }
    }

    func run() throws {
        let minimum = level.flatMap { Self.levels.firstIndex(of: $0.lowercased()) } ?? 0
        for file in try files() {
            let text: String
            do {
                text = try read(file)
            } catch {
                throw Self.failing("\(file): \(error)")
            }
            var out = ""
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) where keep(line, minimum: minimum)
            {
                out += line + "\n"
            }
            FileHandle.standardOutput.write(Data(out.utf8))
        }
    }

    /// Every file to print, in order: per directory, archives by name (their names start with the
    /// time of their first line), then active files.
    func files() throws -> [String] {
        var result: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw Self.failing("\(path): no such file or directory")
            }
            guard isDirectory.boolValue else {
                result.append(path)
                continue
            }
            let logs = FileManager.default.fileExists(atPath: "\(path)/logs") ? "\(path)/logs" : path
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []).filter {
                $0.hasSuffix(".log") || $0.hasSuffix(".log.gz")
            }
            let archives = names.filter { $0.contains("--") }.sorted()
            let active = names.filter { !$0.contains("--") }.sorted()
            result += (archives + active).map { "\(logs)/\($0)" }
        }
        return result
    }

    func read(_ path: String) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        if path.hasSuffix(".gz") || data.starts(with: [0x1F, 0x8B]) {
            return String(decoding: try GzipData.decompress(Array(data), limit: 1 << 30), as: UTF8.self)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Text: `<time> <TAG> <label>: …`; JSON Lines: `"level":"…"` and `"label":"…"`.
    func keep(_ line: Substring, minimum: Int) -> Bool {
        guard level != nil || label != nil else { return true }
        var lineLevel: Int?
        var lineLabel: Substring?
        if line.hasPrefix("{") {
            if let value = Self.jsonField("level", in: line) { lineLevel = Self.levels.firstIndex(of: String(value)) }
            lineLabel = Self.jsonField("label", in: line)
        } else {
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            if parts.count >= 3 {
                lineLevel = Self.textTags[String(parts[1])]
                lineLabel = parts[2].hasSuffix(":") ? parts[2].dropLast() : parts[2]
            }
        }
        if level != nil, let lineLevel, lineLevel < minimum { return false }
        if let label, let lineLabel, !lineLabel.hasPrefix(label) { return false }
        return true
    }

    static func jsonField(_ name: String, in line: Substring) -> Substring? {
        guard let start = line.range(of: "\"\(name)\":\"") else { return nil }
        let rest = line[start.upperBound...]
        return rest.firstIndex(of: "\"").map { rest[..<$0] }
    }
}
