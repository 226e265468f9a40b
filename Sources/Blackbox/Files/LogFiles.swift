import BlackboxFormat

/// The log files in a diagnostics directory's `logs/`, as the naming scheme (`ArchiveName`) sees
/// them. For the uploader and the CLI, so that nobody else parses archive names.
package enum LogFiles {
    /// `<baseName>.log`
    public static func activeFileName(baseName: String) -> String { ArchiveName.activeFileName(baseName: baseName) }

    /// The archives of every instance of the app (`<base>`, `<base>.1`, …: several processes on one
    /// directory), each instance's in order.
    public static func archivesOfEveryInstance(inDirectory directory: String, baseName: String) -> [String] {
        (0..<BlackboxInstances.limit).flatMap {
            archives(inDirectory: directory, baseName: BlackboxInstances.logBaseName(baseName, instance: $0))
        }
    }

    /// File names of `baseName`'s archives in `directory`, oldest first. An archive whose
    /// uncompressed and compressed forms both exist (compression in progress) is listed once, as
    /// the uncompressed file.
    public static func archives(inDirectory directory: String, baseName: String) -> [String] {
        withoutCompressedTwins(directoryEntries(directory))
            .compactMap { ArchiveName(fileName: $0, baseName: baseName) }.sorted().map(\.fileName)
    }

    /// `names` without the `.gz` of an archive whose uncompressed form is there too (compression in
    /// progress, or a process killed before it removed the plain one): the uncompressed file is what
    /// the log holds, and what the next start compresses again.
    package static func withoutCompressedTwins(_ names: [String]) -> [String] {
        let present = Set(names)
        return names.filter { !($0.hasSuffix(".gz") && present.contains(String($0.dropLast(3)))) }
    }
}

extension LogFiles {
    /// The base names with an active file or an archive in `directory` (`shop` for `shop.log` and
    /// `shop.<start>--<end>.log.gz`), sorted.
    public static func baseNames(inDirectory directory: String) -> [String] {
        var bases = Set<String>()
        for name in directoryEntries(directory) {
            if let range = name.firstRange(of: "--") {
                // `<base>.<start>--…`: the start time is 20 characters (`20261121T223939.123Z`).
                let beforeEnd = name[..<range.lowerBound]
                guard beforeEnd.count > 21 else { continue }
                let base = String(beforeEnd.dropLast(21))
                if ArchiveName(fileName: name, baseName: base) != nil { bases.insert(base) }
            } else if name.hasSuffix(".log"), name.count > 4 {
                bases.insert(String(name.dropLast(4)))
            }
        }
        return bases.sorted()
    }
}
