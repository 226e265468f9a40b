#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxTestSupport
    import Foundation
    import Testing

    @testable import BlackboxUpload

    /// The active log's new lines, cut into the spool while the app runs (issue 33, item 4).
    @Suite struct LiveLogShippingTests {
        let writer = BundleWriter(app: .init(name: "shop", version: "1.0"), host: "web-1")

        func shipping(_ scratch: TemporaryDirectory) -> (LiveLogShipping, Spool) {
            (
                LiveLogShipping(directory: scratch.path, baseFileName: "shop"),
                Spool(diagnosticsDirectory: scratch.path)
            )
        }

        /// The log text of every bundle in the spool, in the order the segments were cut.
        func spooledText(_ spool: Spool) throws -> [String] {
            try spool.pending().map { bundle in
                try BundleWriterTests.contents(of: bundle.path).filter { $0.key.hasPrefix("logs/") }.map {
                    String(decoding: $0.value, as: UTF8.self)
                }
                .joined()
            }
        }

        func append(_ scratch: TemporaryDirectory, _ text: String, to name: String = "logs/shop.log") throws {
            let path = "\(scratch.path)/\(name)"
            if !FileManager.default.fileExists(atPath: path) { scratch.write(name, "") }
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
        }

        @Test("complete lines only, each once, in segments that follow each other")
        func segments() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (live, spool) = shipping(scratch)
            try append(scratch, "line 1\nline 2\nhalf a li")
            #expect(try live.cut(writer: writer, into: spool) == 14)
            #expect(try live.cut(writer: writer, into: spool) == 0, "nothing complete since")
            try append(scratch, "ne\nline 4\n")
            #expect(try live.cut(writer: writer, into: spool) == 19)
            let texts = try spooledText(spool).sorted()
            #expect(texts == ["half a line\nline 4\n", "line 1\nline 2\n"])
        }

        @Test("killed after writing a segment and before recording it: the next cut is the same upload")
        func killedBeforeTheRecord() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (live, spool) = shipping(scratch)
            try append(scratch, "line 1\n")
            try live.cut(writer: writer, into: spool)
            let recorded = try #require(DurableFile.read(DiagnosticsDirectory(scratch.path).liveLog))
            try append(scratch, "line 2\n")
            try live.cut(writer: writer, into: spool)
            let firstTwo = spool.pending().map(\.id).sorted { $0.uuidString < $1.uuidString }
            #expect(firstTwo.count == 2)
            // The second cut's record never happened; its bundle is in the spool, unsent.
            try DurableFile.write(recorded, to: DiagnosticsDirectory(scratch.path).liveLog)
            try append(scratch, "line 3\n")
            try live.cut(writer: writer, into: spool)
            #expect(
                spool.pending().map(\.id).sorted { $0.uuidString < $1.uuidString } == firstTwo,
                "the same bundle id, written again with what is there now")
            #expect(try spooledText(spool).sorted() == ["line 1\n", "line 2\nline 3\n"])
        }

        @Test("a rotated file's rest comes from its compressed archive, which is then not sent again")
        func rotation() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (live, spool) = shipping(scratch)
            try append(scratch, "old 1\nold 2\n")
            try live.cut(writer: writer, into: spool)
            try append(scratch, "old 3\n")
            // Rotation as Blackbox does it: the file renamed to its archive name and compressed; a new
            // active file.
            let logs = DiagnosticsDirectory(scratch.path).logs
            let archive = "shop.20261126T090000.000Z--20261126T100000.000Z.log"
            try FileManager.default.moveItem(atPath: "\(logs)/shop.log", toPath: "\(logs)/\(archive)")
            try Gzip.compress("\(logs)/\(archive)", to: "\(logs)/\(archive).gz")
            unlink("\(logs)/\(archive)")
            try append(scratch, "new 1\n")
            #expect(try live.cut(writer: writer, into: spool) == 12)
            #expect(try spooledText(spool).sorted() == ["new 1\n", "old 1\nold 2\n", "old 3\n"])
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            #expect(snapshot.select().archives.isEmpty, "the archive's lines are all shipped")
            // An archive that is not the shipped file (another first line) still goes as a whole.
            scratch.write("logs/shop.20261126T080000.000Z--20261126T083000.000Z.log", "older\n")
            #expect(snapshot.select().archives.map(\.entryPath).count == 1)
        }

        @Test("a rotated file finished from its archive before compression is not sent again once compressed")
        func finishedBeforeCompression() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (live, spool) = shipping(scratch)
            try append(scratch, "old 1\n")
            try live.cut(writer: writer, into: spool)
            try append(scratch, "old 2\n")
            let logs = DiagnosticsDirectory(scratch.path).logs
            let archive = "shop.20261126T090000.000Z--20261126T100000.000Z.log"
            try FileManager.default.moveItem(atPath: "\(logs)/shop.log", toPath: "\(logs)/\(archive)")
            try append(scratch, "new 1\n")
            try live.cut(writer: writer, into: spool)
            #expect(try spooledText(spool).sorted() == ["new 1\n", "old 1\n", "old 2\n"])
            // The archive maintainer compresses it afterwards (a race the live-log test found).
            try Gzip.compress("\(logs)/\(archive)", to: "\(logs)/\(archive).gz")
            unlink("\(logs)/\(archive)")
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            #expect(snapshot.select().archives.isEmpty, "\(snapshot.select().archives.map(\.entryPath))")
        }

        @Test("rotated after a cut: the pass does not take the archive whole; the next cut ships its rest")
        func rotatedBetweenCutAndChoice() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (live, spool) = shipping(scratch)
            try append(scratch, "old 1\n")
            try live.cut(writer: writer, into: spool)
            #expect(live.archiveInFlight() == nil)
            try append(scratch, "old 2\n")
            let logs = DiagnosticsDirectory(scratch.path).logs
            let archive = "shop.20261126T090000.000Z--20261126T100000.000Z.log"
            try FileManager.default.moveItem(atPath: "\(logs)/shop.log", toPath: "\(logs)/\(archive)")
            try Gzip.compress("\(logs)/\(archive)", to: "\(logs)/\(archive).gz")
            unlink("\(logs)/\(archive)")
            // No new active file yet (the logger opens it with its next line).
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            #expect(snapshot.select().archives.map(\.entryPath) == ["logs/\(archive).gz"], "new, not yet sent")
            #expect(live.archiveInFlight() == archive + ".gz", "but it is the file being shipped")
            #expect(live.hasNewLines(), "its rest is new")
            #expect(try live.cut(writer: writer, into: spool) == 6)
            #expect(try spooledText(spool).sorted() == ["old 1\n", "old 2\n"])
            #expect(live.archiveInFlight() == nil && snapshot.select().archives.isEmpty)
            try append(scratch, "new 1\n")
            #expect(try live.cut(writer: writer, into: spool) == 6, "the new file from its start")
        }

        @Test("killed after bundling and before recording it: the next process marks what waiting bundles hold")
        func bundledButNotMarked() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let layout = DiagnosticsDirectory(scratch.path)
            scratch.write("logs/shop.20261126T090000.000Z--20261126T100000.000Z.log", "archived\n")
            scratch.write("outbox/crash-1.json", "{}")
            scratch.write("logs/shop.log", "active\n")
            let snapshot = DiagnosticsSnapshot(directory: scratch.path, baseFileName: "shop")
            let selection = snapshot.select()
            #expect(selection.archives.count == 1 && selection.reports.count == 1)
            let spool = Spool(diagnosticsDirectory: scratch.path)
            // `bundle` without its `markBundled`: what a kill between the two leaves.
            try writer.write(selection.items, into: spool.directory)
            #expect(snapshot.select().archives.count == 1, "unmarked, it would be chosen again")
            try snapshot.markBundled(waitingIn: spool)
            #expect(snapshot.select().isEmpty)
            #expect(layout.reportFiles().isEmpty && spool.pending().count == 1)
            #expect(FileManager.default.fileExists(atPath: "\(layout.logs)/shop.log"), "the active file is not touched")
        }

        @Test("segment ids are derived from the file and the offset")
        func segmentIDs() {
            let state = LiveLogShipping.State(device: 1, inode: 2, head: "ab", shipped: 0)
            #expect(LiveLogShipping.segmentID(state, start: 10) == LiveLogShipping.segmentID(state, start: 10))
            #expect(LiveLogShipping.segmentID(state, start: 10) != LiveLogShipping.segmentID(state, start: 11))
            var other = state
            other.inode = 3
            #expect(LiveLogShipping.segmentID(state, start: 10) != LiveLogShipping.segmentID(other, start: 10))
        }
    }
#endif
