import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 30, item 2: one project's debug file that stalls llvm-symbolizer must not delay another
/// project's reports, and its failures are bounded and stored. The symbolizer here is a script that
/// answers every lookup at once, except lookups in the file named `wedge`: those hang (phase 1) or
/// kill it (phase 2, once `crash` exists beside it). It logs every line it is asked.
@Suite("Symbolication fairness")
struct SymbolicationFairnessTests {
    static let script = """
        #!/bin/bash
        directory=$(dirname "$0")
        while IFS= read -r line; do
            printf '%s\\n' "$line" >> "$directory/asked.log"
            case "$line" in
                *wedge*) if [ -e "$directory/crash" ]; then exit 1; fi; exec sleep 600 ;;
            esac
            echo '{"Address":"0x1","ModuleName":"m","Symbol":[{"FunctionName":"namedByTheSymbolizer","FileName":"/src/Shop.swift","Line":7,"Column":1}]}'
        done
        """

    struct Setup {
        let directory: TemporaryDirectory
        let store: SQLiteStore
        let blobs: DirectoryBlobStore
        let symbolizer: String
        let hostile: Int64
        let quiet: Int64

        init() async throws {
            directory = TemporaryDirectory(prefix: "fairness")
            store = try SQLiteStore(path: "\(directory.path)/collector.sqlite")
            try await store.migrate()
            blobs = try DirectoryBlobStore(
                root: "\(directory.path)/symbols", temporaryDirectory: "\(directory.path)/tmp", fileExtension: "elf")
            symbolizer = "\(directory.path)/fake-symbolizer"
            try Tool.installScript(SymbolicationFairnessTests.script, at: symbolizer)
            hostile = try await store.createProject(name: "hostile").id
            quiet = try await store.createProject(name: "quiet").id
            // The hostile project's reports are older: a queue in arrival order would serve them first.
            _ = try await store.index(
                (0..<6).map { _ in
                    StoreContractTests.newBundle(
                        project: hostile, reports: [StoreContractTests.symbolTableReport(version: "1.0", host: "a")])
                })
            _ = try await store.index([
                StoreContractTests.newBundle(
                    project: quiet, reports: [StoreContractTests.symbolTableReport(version: "2.0", host: "b")])
            ])
            for (project, blob) in [(hostile, "wedge"), (quiet, "good")] {
                _ = try await store.addSymbolFile(
                    NewSymbolFile(
                        projectID: project, buildID: "ab", fileName: "\(blob).debug", size: 1, sha256: blob,
                        blob: blob, hasDebugInfo: true, hasCode: false, uploadedAt: Date()))
            }
        }

        func service(timeout: Duration) -> SymbolicationService {
            SymbolicationService(
                store: store, symbolBlobs: blobs,
                symbolizers: (0..<2).map { _ in SymbolizerProcess(executable: symbolizer, timeout: timeout) },
                metrics: CollectorMetrics(), maxDeferral: .zero, retryDelay: .seconds(1))
        }

        func reports(of project: Int64) async throws -> [StoredReport] {
            let scope = ProjectScope(projectID: project)
            var reports: [StoredReport] = []
            for group in try await store.groups(in: scope, page: Page()) {
                for occurrence in try await store.occurrences(groupID: group.id, in: scope, page: Page()) {
                    if let report = try await store.report(id: occurrence.reportID, in: scope) {
                        reports.append(report)
                    }
                }
            }
            return reports
        }

        var wedgeLookups: Int {
            let log = (try? String(contentsOfFile: "\(directory.path)/asked.log", encoding: .utf8)) ?? ""
            return log.split(separator: "\n").filter { $0.contains("wedge") }.count
        }

        func hostileFileFailures() async throws -> Int {
            try await store.symbolFiles(buildIDs: ["ab"], in: ProjectScope(projectID: hostile)).first?
                .symbolizerFailures ?? -1
        }
    }

    @Test(
        "a project whose debug file stalls the symbolizer holds one lane: another project's report is symbolicated meanwhile; the file is left out after 3 failures, for good"
    )
    func oneProjectCannotStallAnother() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        let service = setup.service(timeout: .seconds(10))
        let pass = Task { await service.symbolicatePending() }

        // Phase 1: the hostile file hangs its lane for 10 s; the quiet project's report is done while
        // that first lookup is still hanging (no failure recorded yet).
        var quietDone = false
        for _ in 0..<200 where !quietDone {
            let quiet = try await setup.reports(of: setup.quiet)
            quietDone = quiet.count == 1 && quiet[0].symbolication?.state == .missing
            if !quietDone { try await Task.sleep(for: .milliseconds(25)) }
        }
        #expect(quietDone, "the quiet project's report waited for the hostile one")
        #expect(try await setup.hostileFileFailures() == 0, "the quiet report should not have waited for a timeout")
        let quiet = try #require(try await setup.reports(of: setup.quiet).first)
        #expect(
            quiet.report.frames.contains { $0.symbols.contains { $0.function == "namedByTheSymbolizer" } },
            "\(quiet.report.frames.map(\.symbols))")
        // Under load the quiet report can be done before the other lane's symbolizer has even been
        // asked: the hostile lookup is then seen arriving (and staying alone) a little later.
        for _ in 0..<200 where setup.wedgeLookups == 0 { try await Task.sleep(for: .milliseconds(25)) }
        #expect(setup.wedgeLookups == 1, "one lane is stuck on the hostile file")

        // Phase 2: the symbolizer now dies on the file at once. After 3 failures the file is left out:
        // every hostile report ends failed, with the reason, and the pass ends.
        _ = FileManager.default.createFile(atPath: "\(setup.directory.path)/crash", contents: nil)
        _ = await pass.value
        // The reports whose attempt failed are retried after the retry delay (1 s here): without the file.
        for _ in 0..<20 {
            if try await setup.reports(of: setup.hostile).allSatisfy({ $0.symbolication?.state == .failed }) { break }
            try await Task.sleep(for: .milliseconds(500))
            await service.symbolicatePending()
        }
        #expect(try await setup.hostileFileFailures() == SymbolicationService.maxFailuresPerFile)
        #expect(setup.wedgeLookups == SymbolicationService.maxFailuresPerFile)
        let hostile = try await setup.reports(of: setup.hostile)
        #expect(hostile.count == 6)
        for report in hostile {
            let state = try #require(report.symbolication)
            #expect(state.state == .failed, "\(state)")
            #expect(state.failure?.contains("wedge.debug") == true, "\(state)")
        }

        // A restarted collector does not try the file again: queued anew, the reports fail at once.
        #expect(try await setup.store.requestSymbolication(projectID: setup.hostile, buildID: "ab") == 6)
        let restarted = setup.service(timeout: .seconds(10))
        await restarted.symbolicatePending()
        #expect(setup.wedgeLookups == SymbolicationService.maxFailuresPerFile, "the left-out file was tried again")
        #expect(try await setup.reports(of: setup.hostile).allSatisfy { $0.symbolication?.state == .failed })
    }
}
