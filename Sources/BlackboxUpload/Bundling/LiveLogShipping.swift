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

        /// The active file as a cut sees it: nil when it is missing, not a regular file, or has no
        /// complete line yet.
        private struct ActiveFile {
            var name: String
            var path: String
            var size: Int64
            /// This file, nothing of it shipped.
            var unshipped: State

            func isShipped(as state: State) -> Bool {
                (state.device, state.inode, state.head) == (unshipped.device, unshipped.inode, unshipped.head)
                    && state.shipped <= size
            }
        }

        private func activeFile() -> ActiveFile? {
            let name = LogFiles.activeFileName(baseName: baseFileName)
            let path = "\(layout.logs)/\(name)"
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
                let head = Self.firstLineHash(of: Self.prefix(ofFile: path))
            else { return nil }
            return ActiveFile(
                name: name, path: path, size: Int64(info.st_size),
                unshipped: State(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), head: head, shipped: 0))
        }

        /// Whether a cut now would ship something: the file has complete lines past the recorded offset,
        /// or it is another file than the one shipped so far. Cheap (a stat, the first line, one read
        /// back from the end), for the pass to ask consent before cutting.
        func hasNewLines() -> Bool {
            guard let file = activeFile() else { return false }
            guard let state = loadState(), file.isShipped(as: state) else { return true }
            return Self.lastLineEnd(inFile: file.path, from: state.shipped, upTo: file.size).map { $0 > state.shipped }
                == true
        }

        /// Cuts what is new into `spool`; returns the bytes cut.
        @discardableResult
        func cut(writer: BundleWriter, into spool: Spool) throws -> Int64 {
            guard let file = activeFile() else { return 0 }
            let (name, path, size) = (file.name, file.path, file.size)
            var cutBytes: Int64 = 0
            var state = loadState()
            if let shipped = state, !file.isShipped(as: shipped) {
                cutBytes += try finishRotated(shipped, writer: writer, into: spool)
                state = nil
            }
            var current = state ?? file.unshipped
            for _ in 0..<maxSegmentsPerPass {
                let start = current.shipped
                guard let end = Self.lastLineEnd(inFile: path, from: start, upTo: min(size, start + maxSegmentBytes)),
                    end > start
                else { break }
                let item = BundleItem(sourcePath: path, entryPath: "logs/\(name)", kind: .log, range: start..<end)
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

        /// The rest of a file that was rotated since its last segment, from its archive: the first
        /// archive not yet sent whose first line is the file's. The archive maintainer compresses a
        /// fresh archive meanwhile (`A.log` becomes `A.log.gz`), so an archive listed but gone when
        /// read sends the search round again.
        private func finishRotated(_ state: State, writer: BundleWriter, into spool: Spool) throws -> Int64 {
            for _ in 0..<3 {
                let archives = LogFiles.archives(inDirectory: layout.logs, baseName: baseFileName)
                var vanished = false
                var sent = SentArchives(diagnosticsDirectory: directory)
                for archive in archives.reversed() where !sent.contains(archive) {
                    let path = "\(layout.logs)/\(archive)"
                    guard let content = readArchive(path) else {
                        vanished = vanished || !FileManager.default.fileExists(atPath: path)
                        continue
                    }
                    guard Self.firstLineHash(of: Array(content.prefix(64 << 10))) == state.head else { continue }
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
                    try sent.record([archive], stillPresent: Set(archives))
                    return cut
                }
                guard vanished else { return 0 }
            }
            return 0
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
            let digest = Array(SHA256.hash(data: Data("\(state.device):\(state.inode):\(state.head):\(start)".utf8)))
            var bytes = Array(digest.prefix(16))
            bytes[6] = (bytes[6] & 0x0F) | 0x50
            bytes[8] = (bytes[8] & 0x3F) | 0x80
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                    bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
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
