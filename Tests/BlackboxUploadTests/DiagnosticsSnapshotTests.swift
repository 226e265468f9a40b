#if Upload
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation
    import Testing

    @testable import Blackbox
    @testable import BlackboxUpload

    @Suite struct DiagnosticsSnapshotTests {
        static let archive1 = "shop.20261121T100000.000Z--20261121T110000.000Z.log.gz"
        static let archive2 = "shop.20261121T110000.000Z--20261121T120000.000Z.log"

        func diagnosticsDirectory() throws -> (TemporaryDirectory, crash: String, nonfatal: String) {
            let scratch = TemporaryDirectory()
            let crash = try Fixtures.outboxReport(in: scratch, kind: .crash)
            let nonfatal = try Fixtures.outboxReport(in: scratch, kind: .nonfatal)
            scratch.write("outbox/notes.json", "{}")  // not a report: stays
            scratch.write("logs/\(Self.archive1)", Data([0x1F, 0x8B, 8, 0]))
            scratch.write("logs/\(Self.archive2)", "archived\n")
            scratch.write("logs/other.log", "another app\n")
            scratch.write("logs/shop.log", (0..<100).map { "line \($0)\n" }.joined())
            return (scratch, crash, nonfatal)
        }

        @Test func selectsReportsUnsentArchivesAndTheActiveFilesEndAtALineStart() throws {
            let (scratch, crash, nonfatal) = try diagnosticsDirectory()
            defer { scratch.remove() }
            var options = BundleOptions()
            options.activeLogMaxBytes = 25
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop", options: options)
            let selection = snapshot.select()
            #expect(Set(selection.reports.map(\.sourcePath)) == [crash, nonfatal])
            #expect(selection.reports.allSatisfy { $0.entryPath.hasPrefix("reports/") && $0.kind == .report })
            #expect(selection.archives.map(\.entryPath) == ["logs/\(Self.archive1)", "logs/\(Self.archive2)"])
            let active = try #require(selection.activeLog)
            let text = try String(contentsOfFile: active.sourcePath, encoding: .utf8)
            let utf8 = Array(text.utf8)
            let tail = String(
                decoding: utf8[Int(active.range.lowerBound)..<Int(active.range.upperBound)], as: UTF8.self)
            #expect(tail == "line 97\nline 98\nline 99\n")
        }

        @Test func whatTheOutboxWritesTheSnapshotBundlesOnceAndALinkedReportStaysOut() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let layout = DiagnosticsDirectory(scratch.path)
            let report = Fixtures.report(kind: .nonfatal)
            let written = try Outbox(layout).write(report)
            #expect(written == layout.reportBasePath(report) + ".json")
            #expect(FileManager.default.fileExists(atPath: String(written.dropLast(5)) + ".txt"))
            let elsewhere = scratch.write("elsewhere/crash-0.json", "{}")
            #expect(symlink(elsewhere, "\(layout.outbox)/crash-linked.json") == 0)
            #expect(layout.reportFiles() == [written])

            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            let selection = snapshot.select()
            #expect(selection.reports.map(\.sourcePath) == [written])
            let spool = Spool(diagnosticsDirectory: scratch.path)
            let bundles = try snapshot.bundle(
                selection, as: BundleWriter(app: .init(name: "shop"), host: "h"), into: spool)
            #expect(bundles.count == 1 && spool.pending().count == 1)
            #expect(!FileManager.default.fileExists(atPath: written), "the report left the outbox once bundled")
            #expect(!FileManager.default.fileExists(atPath: String(written.dropLast(5)) + ".txt"))
            #expect(snapshot.select().isEmpty)
        }

        @Test func markBundledRemovesTheReportsAndSendsEachArchiveOnce() throws {
            let (scratch, _, _) = try diagnosticsDirectory()
            defer { scratch.remove() }
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            try snapshot.markBundled(snapshot.select())
            #expect(scratch.files(in: "outbox") == ["notes.json", "sent-archives"])

            var next = snapshot.select()
            #expect(next.isEmpty)
            #expect(next.activeLog == nil)  // never a bundle for the active file alone

            // A new archive appears; the ledger forgets archives that aging deleted.
            let archive3 = "shop.20261121T120000.000Z--20261121T130000.000Z.log"
            scratch.write("logs/\(archive3)", "newer\n")
            unlink("\(scratch.path)/logs/\(Self.archive1)")
            next = snapshot.select()
            #expect(next.archives.map(\.entryPath) == ["logs/\(archive3)"])
            try snapshot.markBundled(next)
            let ledger = try String(contentsOfFile: "\(scratch.path)/outbox/sent-archives", encoding: .utf8)
            #expect(ledger == "\(Self.archive2)\n\(archive3)\n")
        }

        @Test func activeLogPolicies() throws {
            let (scratch, _, _) = try diagnosticsDirectory()
            defer { scratch.remove() }
            var options = BundleOptions()
            options.activeLog = .never
            #expect(
                DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop", options: options).select().activeLog
                    == nil)
            options.activeLog = .always
            options.includeArchives = false
            for report in scratch.files(in: "outbox") { unlink("\(scratch.path)/outbox/\(report)") }
            #expect(
                DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop", options: options).select().activeLog
                    == nil)
            options.includeArchives = true
            #expect(
                DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop", options: options).select().activeLog
                    != nil)
        }
    }
#endif
