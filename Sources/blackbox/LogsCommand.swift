#if Tools
    import ArgumentParser
    import Blackbox
    import BlackboxCompression
    import BlackboxFormat
    import Foundation

    struct Logs: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print or follow log files, gzip archives included, oldest first.",
            discussion: """
                PATH is a diagnostics directory (its logs/ folder is read), a logs folder, or log files. \
                Archives (<base>.<start>--<end>.log[.gz]) come before the active file. With --journal, the \
                lines still in a diagnostics directory's crash-safe journal (logged but not yet in a file, \
                e.g. after kill -9) follow. Filters apply to lines in Blackbox's text and JSON Lines formats; \
                other lines are kept. Times are UTC: 2026-11-22T10:00:00Z, 2026-11-22, or an age like 90s, \
                15m, 2h, 3d.
                """)

        @Argument(help: "Directories or files.") var paths: [String]
        @Option(help: "Only lines at this level or above (trace, debug, info, notice, warning, error, critical).")
        var level: String?
        @Option(help: "Only lines whose label starts with this.") var label: String?
        @Option(help: "Only lines at or after this time.") var since: String?
        @Option(help: "Only lines before this time.") var until: String?
        @Flag(name: .shortAndLong, help: "Keep printing lines as they are added to the active files.")
        var follow = false
        @Flag(help: "Also print the lines still in the journal of each diagnostics directory.") var journal = false

        func validate() throws {
            if let level, LineFilter.levels.firstIndex(of: level.lowercased()) == nil {
                throw ValidationError(
                    "--level must be one of \(LineFilter.levels.joined(separator: ", ")), got \(level)")
            }
            for (name, value) in [("--since", since), ("--until", until)] {
                if let value, LineFilter.timestamp(value, now: Date()) == nil {
                    throw ValidationError("\(name): not a time or an age: \(value)")
                }
            }
        }

        func run() async throws {
            let now = Date()
            let filter = LineFilter(
                minimumLevel: level.flatMap { LineFilter.levels.firstIndex(of: $0.lowercased()) }, labelPrefix: label,
                since: since.flatMap { LineFilter.timestamp($0, now: now) },
                until: until.flatMap { LineFilter.timestamp($0, now: now) })
            let sources = try LogSources.resolve(paths)
            var pendings: [(directory: String, pending: JournalInspector.Pending)] = []
            if journal {
                // Every instance's journal (several processes of the app on one directory).
                for directory in sources.diagnosticsDirectories {
                    for path in DiagnosticsDirectory(directory).journals {
                        do {
                            pendings.append((directory, try JournalInspector.pendingLines(path: path)))
                        } catch {
                            throw Self.failing("\(path): \(error)")
                        }
                    }
                }
            }
            for file in sources.files {
                // With the journal, the log reads as it will after the next start: the part of the active
                // file that recovery cuts away is printed from the journal instead.
                let kept = pendings.compactMap { $0.pending.keptSize(ofFileAt: file) }.min()
                do {
                    try print(filter.apply(to: LogSources.read(file, prefix: kept)))
                } catch {
                    throw Self.failing("\(file): \(error)")
                }
            }
            for (_, pending) in pendings {
                print(filter.apply(to: pending.lines.joined(separator: "\n")))
            }
            guard follow else { return }
            let followed = sources.files.filter { !$0.hasSuffix(".gz") && !LogSources.isArchive($0) }
            guard !followed.isEmpty else { throw Self.failing("nothing to follow: no active log file among the paths") }
            var tails = followed.map { FileTail(path: $0, startAtEnd: true) }
            while !Task.isCancelled {
                var printed = false
                for index in tails.indices {
                    let text = tails[index].readNew()
                    if !text.isEmpty {
                        print(filter.apply(to: text))
                        printed = true
                    }
                }
                if !printed { try await Task.sleep(for: .milliseconds(200)) }
            }
        }

        private func print(_ text: String) {
            guard !text.isEmpty else { return }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// Which files `logs` reads, and how.
    enum LogSources {
        struct Resolved {
            var files: [String] = []
            var diagnosticsDirectories: [String] = []
        }

        /// Every file to print, in order: per directory, archives by name (their names start with the
        /// time of their first line), then active files.
        static func resolve(_ paths: [String]) throws -> Resolved {
            var result = Resolved()
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    throw Logs.failing("\(path): no such file or directory")
                }
                guard isDirectory.boolValue else {
                    result.files.append(path)
                    continue
                }
                let layout = DiagnosticsDirectory(path)
                if FileManager.default.fileExists(atPath: layout.journal) { result.diagnosticsDirectories.append(path) }
                let logs = FileManager.default.fileExists(atPath: layout.logs) ? layout.logs : path
                // An archive compressed by a process killed before it removed the plain one is there
                // twice: read once, as the next start leaves it.
                let names = LogFiles.withoutCompressedTwins(
                    (try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []
                ).filter { $0.hasSuffix(".log") || $0.hasSuffix(".log.gz") }
                let archives = names.filter(isArchive).sorted()
                let active = names.filter { !isArchive($0) }.sorted()
                result.files += (archives + active).map { "\(logs)/\($0)" }
            }
            return result
        }

        static func isArchive(_ path: String) -> Bool { path.split(separator: "/").last?.contains("--") ?? false }

        /// The file's text, or only its first `prefix` bytes (of a plain file).
        static func read(_ path: String, prefix: UInt64? = nil) throws -> String {
            var data = try Data(contentsOf: URL(fileURLWithPath: path))
            if let prefix, prefix < data.count { data = data.prefix(Int(prefix)) }
            if path.hasSuffix(".gz") || data.starts(with: [0x1F, 0x8B]) {
                return String(decoding: try GzipData.decompress(Array(data), limit: 1 << 30), as: UTF8.self)
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// The growing end of a file, across rotations: when the file at the path is replaced (another
    /// inode) or truncated, reading starts again at its beginning.
    struct FileTail {
        let path: String
        var inode: UInt64 = 0
        var offset: UInt64 = 0
        /// A line still being written, held back until its newline arrives.
        var partial = Data()

        init(path: String, startAtEnd: Bool) {
            self.path = path
            var info = stat()
            if stat(path, &info) == 0 {
                inode = UInt64(info.st_ino)
                offset = startAtEnd ? UInt64(info.st_size) : 0
            }
        }

        mutating func readNew() -> String {
            var info = stat()
            guard stat(path, &info) == 0 else { return "" }
            if UInt64(info.st_ino) != inode || UInt64(info.st_size) < offset {
                inode = UInt64(info.st_ino)
                offset = 0
                partial = Data()
            }
            guard UInt64(info.st_size) > offset, let handle = FileHandle(forReadingAtPath: path) else { return "" }
            defer { try? handle.close() }
            try? handle.seek(toOffset: offset)
            let data = (try? handle.read(upToCount: 4 << 20)) ?? Data()
            offset += UInt64(data.count)
            partial += data
            guard let lastNewline = partial.lastIndex(of: UInt8(ascii: "\n")) else { return "" }
            let complete = partial[partial.startIndex...lastNewline]
            partial = Data(partial[(lastNewline + 1)...])
            return String(decoding: complete, as: UTF8.self)
        }
    }
#endif
