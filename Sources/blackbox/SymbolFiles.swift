#if Tools
    import BlackboxSymbols
    import Foundation

    /// The ELF files `blackbox symbols upload` was pointed at: files as named, and every regular file
    /// under a directory (a build directory, or a `.build-id/xx/yyyy.debug` tree); files in directories
    /// that are not ELF are passed over, a named file that is not ELF is a problem.
    struct SymbolFiles {
        struct Candidate {
            var path: String
            var info: ELFSymbolFile
            /// What the collector shows: the file's own name (a `.build-id/xx/yyyy.debug` file is named
            /// by its build-id, which says nothing to a person, but so be it).
            var name: String { (path as NSString).lastPathComponent }
        }

        var candidates: [Candidate] = []

        init(paths: [String]) throws {
            for path in paths {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                    throw InputProblem(description: "\(path): no such file or directory")
                }
                if isDirectory.boolValue {
                    for file in Self.regularFiles(under: path) {
                        if let info = ELFSymbolFile(path: file) { candidates.append(Candidate(path: file, info: info)) }
                    }
                } else {
                    guard let info = ELFSymbolFile(path: path) else {
                        throw InputProblem(description: "\(path): not a 64-bit little-endian ELF file")
                    }
                    candidates.append(Candidate(path: path, info: info))
                }
            }
        }

        /// Regular files only, sorted; symbolic links are not followed (a `.build-id` tree links to the
        /// files it names, which are found where they are).
        private static func regularFiles(under directory: String) -> [String] {
            guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
            var files: [String] = []
            while let relative = enumerator.nextObject() as? String {
                let path = "\(directory)/\(relative)"
                var status = stat()
                guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
                files.append(path)
            }
            return files.sorted()
        }
    }
#endif
