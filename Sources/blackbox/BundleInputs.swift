#if Tools
    import Blackbox
    import BlackboxFormat
    import BlackboxUpload
    import Foundation

    /// Turns the paths given to `bundle` and `upload` into bundle items: crash and non-fatal reports
    /// (JSON that parses as a report) go to `reports/`, everything else to `logs/`. A diagnostics
    /// directory contributes its outbox reports (`DiagnosticsDirectory.reportFiles`, the uploader's
    /// definition) and its log files; any other directory, every regular file below it (hidden ones
    /// skipped).
    struct BundleInputs {
        var items: [BundleItem] = []
        /// The app named by the first report, if any.
        var app: CrashReport.App?
        var host: String?
        private var usedNames = Set<String>()

        init(paths: [String]) throws {
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    throw InputProblem(description: "\(path): no such file or directory")
                }
                if !isDirectory.boolValue {
                    try add(file: path)
                } else if DiagnosticsDirectory.isDiagnosticsDirectory(path) {
                    // The outbox's reports as the uploader defines them, and every log file.
                    let layout = DiagnosticsDirectory(path)
                    let root = Self.resolved(path)
                    for report in layout.reportFiles() { try addIfInside(root, report) }
                    for name in Self.names(in: layout.logs) where name.hasSuffix(".log") || name.hasSuffix(".log.gz") {
                        try addIfInside(root, "\(layout.logs)/\(name)")
                    }
                } else {
                    guard let walker = FileManager.default.enumerator(atPath: path) else {
                        throw InputProblem(description: "\(path): cannot read the directory")
                    }
                    var files: [String] = []
                    while let relative = walker.nextObject() as? String {
                        if relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { continue }
                        var isDirectory: ObjCBool = false
                        let full = "\(path)/\(relative)"
                        if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory),
                            !isDirectory.boolValue
                        {
                            files.append(full)
                        }
                    }
                    let root = Self.resolved(path)
                    for file in files.sorted() { try addIfInside(root, file) }
                }
            }
        }

        private mutating func add(file path: String) throws {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw InputProblem(description: "\(path): cannot read")
            }
            let size = (try? handle.seekToEnd()).map(Int64.init) ?? 0
            try? handle.close()
            let name = String(path.split(separator: "/").last ?? "file")
            if name.hasSuffix(".zip") {
                throw InputProblem(description: "\(path): already a zip (upload it as it is)")
            }
            var kind = BundleManifest.Entry.Kind.log
            if name.hasSuffix(".json"), size < 64 << 20, let data = FileManager.default.contents(atPath: path),
                let report = try? CrashReport.decode(data)
            {
                kind = .report
                if app == nil {
                    app = report.app
                    host = report.host.name
                }
            }
            let folder = kind == .report ? "reports" : "logs"
            var entry = "\(folder)/\(name)"
            var counter = 1
            while !usedNames.insert(entry).inserted {
                counter += 1
                entry = "\(folder)/\(counter)-\(name)"
            }
            items.append(BundleItem(sourcePath: path, entryPath: entry, kind: kind, range: 0..<size))
        }

        /// A file found by walking a directory is taken only if it really lies inside it: a symbolic
        /// link (to `/etc/shadow`, to another user's files) is skipped with a warning, never followed.
        /// Files named on the command line are taken as named.
        private mutating func addIfInside(_ root: String, _ path: String) throws {
            var link = stat()
            guard lstat(path, &link) == 0, (link.st_mode & S_IFMT) == S_IFREG, Self.resolved(path).hasPrefix(root + "/")
            else {
                FileHandle.standardError.write(
                    Data("blackbox: skipping \(path): not a regular file inside \(root)\n".utf8))
                return
            }
            try add(file: path)
        }

        /// The path with every symbolic link resolved.
        static func resolved(_ path: String) -> String {
            guard let real = realpath(path, nil) else { return path }
            defer { free(real) }
            return String(cString: real)
        }

        private static func names(in directory: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        }
    }
#endif
