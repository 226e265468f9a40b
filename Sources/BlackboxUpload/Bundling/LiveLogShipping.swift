#if Upload
    import Blackbox
    import BlackboxFormat
    import Crypto
    import Foundation

    /// Ships the active log file's new lines while the app runs (docs/uploading.md, "Logs within a
    /// minute"): each pass cuts the complete lines written since the last cut into a bundle of their
    /// own in the spool, then records how far the file has been shipped.
    ///
    /// Exactly once at the collector, whatever is killed when:
    /// - a segment's bundle id is derived from the file's identity and the segment's first byte, so a
    ///   pass killed after writing the bundle and before recording the offset cuts the same upload
    ///   again (it was not sent yet: sending comes after the record);
    /// - a bundle sent whose answer was lost is sent again under the same `Upload-Id`, which the
    ///   collector stores once;
    /// - when the file is rotated, the rest of it is shipped from its archive (found by its first
    ///   line) and the archive is recorded as sent, so its lines do not arrive a second time.
    /// A file is identified by its device, inode and the hash of its first line (an inode can be
    /// reused). Only the first instance's file (`<base>.log`) is shipped live; other instances' lines
    /// arrive in their archives.
    struct LiveLogShipping {
        let directory: String
        let baseFileName: String
        /// At most this much per segment; a larger backlog goes out in several segments.
        var maxSegmentBytes: Int64 = 4 << 20
        /// Segments cut per pass at most: a huge backlog (an app that logged offline for hours) is
        /// caught up over several passes.
        var maxSegmentsPerPass = 8

        struct State: Codable, Equatable {
            var device: UInt64
            var inode: UInt64
            /// sha256 of the file's first line.
            var head: String
            /// Bytes of the file already in the spool.
            var shipped: Int64
        }

        private var layout: DiagnosticsDirectory { DiagnosticsDirectory(directory) }

        /// The active file as a cut sees it, held open: the logger may rotate it (rename, then a new
        /// file under the same name) at any moment, so everything a cut reads of it goes through this
        /// one descriptor. `readablePath` (`/proc/self/fd/N`) opens the same file whatever it is
        /// named by then; read through its name, a segment could hold the next file's lines.
        private struct ActiveFile {
            var name: String
            var handle: FileHandle
            var size: Int64
            /// This file, nothing of it shipped.
            var unshipped: State

            var readablePath: String { Self.readablePath(of: handle.fileDescriptor) }

            static func readablePath(of descriptor: Int32) -> String { "/proc/self/fd/\(descriptor)" }

            func isShipped(as state: State) -> Bool {
                (state.device, state.inode, state.head) == (unshipped.device, unshipped.inode, unshipped.head)
                    && state.shipped <= size
            }
        }

        /// Nil when the active file is missing, not a regular file (`O_NOFOLLOW`: a link planted in the
        /// directory must not carry another file into a bundle), or has no complete line yet.
        private func activeFile() -> ActiveFile? {
            let name = LogFiles.activeFileName(baseName: baseFileName)
            let descriptor = open("\(layout.logs)/\(name)", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            var info = stat()
            guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                let head = Self.firstLineHash(of: Self.prefix(ofFile: ActiveFile.readablePath(of: descriptor)))
            else { return nil }
            return ActiveFile(
                name: name, handle: handle, size: Int64(info.st_size),
                unshipped: State(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), head: head, shipped: 0))
        }

        /// Whether a cut now would ship something: the file has complete lines past the recorded offset,
        /// or the file shipped so far was rotated. Cheap (a stat, the first line, one read back from the
        /// end), for the pass to ask consent before cutting.
        func hasNewLines() -> Bool {
            let state = loadState()
            guard let file = activeFile() else { return state.flatMap { rotatedArchive(of: $0) } != nil }
            guard let state, file.isShipped(as: state) else { return true }
            return Self.lastLineEnd(inFile: file.readablePath, from: state.shipped, upTo: file.size).map {
                $0 > state.shipped
            } == true
        }

        /// The archive of the file shipped so far, when it was rotated since its last segment: the next
        /// cut ships its rest, so a pass's bundles must not take it whole (`DeliveryPass`).
        func archiveInFlight() -> String? {
            guard let state = loadState() else { return nil }
            if let file = activeFile(), file.isShipped(as: state) { return nil }
            return rotatedArchive(of: state)
        }

        /// Cuts what is new into `spool`; returns the bytes cut.
        @discardableResult
        func cut(writer: BundleWriter, into spool: Spool) throws -> Int64 {
            let file = activeFile()
            var cutBytes: Int64 = 0
            var state = loadState()
            if let shipped = state, file.map({ !$0.isShipped(as: shipped) }) ?? true {
                cutBytes += try finishRotated(shipped, writer: writer, into: spool)
                state = nil
            }
            guard let file else {
                // The rotated file is finished and no new one was started yet: nothing is being shipped.
                if cutBytes > 0 { unlink(layout.liveLog) }
                return cutBytes
            }
            var current = state ?? file.unshipped
            for _ in 0..<maxSegmentsPerPass {
                let start = current.shipped
                guard
                    let end = Self.lastLineEnd(
                        inFile: file.readablePath, from: start, upTo: min(file.size, start + maxSegmentBytes)),
                    end > start
                else { break }
                let item = BundleItem(
                    sourcePath: file.readablePath, entryPath: "logs/\(file.name)", kind: .log, range: start..<end)
                let written = try writer.write([item], into: spool.directory, id: Self.segmentID(current, start: start))
                current.shipped = end
                do {
                    try save(current)
                } catch {
                    // Unrecorded, the segment would be cut again, longer, under the same id, which the
                    // collector would take for the one it has: it must not be sent as it is.
                    for bundle in written { unlink(bundle.path) }
                    throw error
                }
                cutBytes += end - start
            }
            if state == nil && current.shipped == 0 { try save(current) }
            return cutBytes
        }

        /// The newest archive not yet sent whose first line is the shipped file's. The archive
        /// maintainer compresses a fresh archive meanwhile (`A.log` becomes `A.log.gz`), so an archive
        /// listed but gone when read sends the search round again.
        private func rotatedArchive(of state: State) -> String? {
            for _ in 0..<3 {
                var vanished = false
                let sent = SentArchives(diagnosticsDirectory: directory)
                for archive in LogFiles.archives(inDirectory: layout.logs, baseName: baseFileName).reversed()
                where !sent.contains(archive) {
                    let path = "\(layout.logs)/\(archive)"
                    guard let prefix = Self.prefix(ofArchive: path) else {
                        vanished = vanished || !FileManager.default.fileExists(atPath: path)
                        continue
                    }
                    if Self.firstLineHash(of: prefix) == state.head { return archive }
                }
                guard vanished else { return nil }
            }
            return nil
        }

        /// The rest of a file that was rotated since its last segment, from its archive, which is then
        /// recorded as sent.
        private func finishRotated(_ state: State, writer: BundleWriter, into spool: Spool) throws -> Int64 {
            // Found, then compressed before it is read: looked for again under its new name.
            for _ in 0..<3 {
                guard let archive = rotatedArchive(of: state) else { return 0 }
                guard let content = readArchive("\(layout.logs)/\(archive)") else { continue }
                var cut: Int64 = 0
                if Int64(content.count) > state.shipped {
                    let rest = "\(layout.outbox)/live-log-rest.log"
                    try DurableFile.write(Array(content[Int(state.shipped)...]), to: rest)
                    defer { unlink(rest) }
                    cut = Int64(content.count) - state.shipped
                    let entry = "logs/" + SentArchives.uncompressed(archive)
                    let item = BundleItem(sourcePath: rest, entryPath: entry, kind: .log, range: 0..<cut)
                    try writer.write([item], into: spool.directory, id: Self.segmentID(state, start: state.shipped))
                }
                var sent = SentArchives(diagnosticsDirectory: directory)
                try sent.record(
                    [archive], stillPresent: Set(LogFiles.archives(inDirectory: layout.logs, baseName: baseFileName)))
                return cut
            }
            return 0
        }

        /// The first 64 KiB of an archive's lines; nil when it cannot be read.
        private static func prefix(ofArchive path: String) -> [UInt8]? {
            path.hasSuffix(".gz") ? try? Gzip.prefix(path, count: 64 << 10) : prefix(ofFile: path)
        }

        /// An archive's lines, uncompressed; nil when it cannot be read (gone, damaged, too large).
        private func readArchive(_ path: String) -> [UInt8]? {
            if path.hasSuffix(".gz") { return try? Gzip.decompress(path, limit: Int(maxSegmentBytes) * 16) }
            return DurableFile.read(path, limit: Int(maxSegmentBytes) * 16)
        }

        private func loadState() -> State? {
            DurableFile.read(layout.liveLog).flatMap { try? JSONDecoder().decode(State.self, from: Data($0)) }
        }

        private func save(_ state: State) throws {
            try DurableFile.write(Array(try JSONEncoder().encode(state)), to: layout.liveLog)
        }

        /// A name-based UUID: the same file and first byte give the same bundle id.
        static func segmentID(_ state: State, start: Int64) -> UUID {
            BundleIdentity.nameBased(
                SHA256.hash(data: Data("\(state.device):\(state.inode):\(state.head):\(start)".utf8)))
        }

        /// The sha256 of the first complete line in `prefix`; nil before the file has one.
        static func firstLineHash(of prefix: [UInt8]?) -> String? {
            guard let prefix, let newline = prefix.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            return SHA256.hash(data: Data(prefix[...newline])).lowercaseHex
        }

        /// The first 64 KiB of a file (enough for any first line Blackbox writes).
        static func prefix(ofFile path: String) -> [UInt8]? {
            guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
            defer { try? handle.close() }
            return (try? handle.read(upToCount: 64 << 10)).map { Array($0) }
        }

        /// The end (past the newline) of the last complete line in `[start, limit)`, or nil.
        static func lastLineEnd(inFile path: String, from start: Int64, upTo limit: Int64) -> Int64? {
            guard limit > start, let handle = FileHandle(forReadingAtPath: path) else { return nil }
            defer { try? handle.close() }
            var windowEnd = limit
            while windowEnd > start {
                let windowStart = max(start, windowEnd - (64 << 10))
                guard (try? handle.seek(toOffset: UInt64(windowStart))) != nil,
                    let window = try? handle.read(upToCount: Int(windowEnd - windowStart))
                else { return nil }
                if let newline = window.lastIndex(of: UInt8(ascii: "\n")) {
                    return windowStart + Int64(newline - window.startIndex) + 1
                }
                windowEnd = windowStart
            }
            return nil
        }
    }
#endif
