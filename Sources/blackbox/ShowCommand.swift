#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxFormat
    import Foundation

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
        @Option(
            name: .customLong("debug-dir"),
            help: "A directory of separated debug info (e.g. /usr/lib/debug, with .build-id/); repeatable.")
        var debugDirectories: [String] = []

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
            guard FileManager.default.fileExists(atPath: report) else {
                throw InputProblem(description: "no such file")
            }
            if report.hasSuffix(".raw") || report.contains(".raw.processing") || report.contains(".raw.retry-") {
                for directory in debugDirectories where !FileManager.default.fileExists(atPath: directory) {
                    throw InputProblem(description: "--debug-dir \(directory): no such directory")
                }
                return try CrashReportProcessor.report(
                    fromRawFile: report, symbolizerPath: symbolizer, debugFileDirectories: debugDirectories)
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
#endif
