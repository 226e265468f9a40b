#if Upload
    import Blackbox
    import BlackboxFormat

    /// The log archives already put into a bundle, so each is uploaded once: one file name per line in
    /// `<dir>/outbox/sent-archives`, written durably after the bundle that holds them is durable (a crash
    /// in between sends an archive twice, never zero times). Names of archives that aging has deleted
    /// are dropped on each write, so the list stays as short as the logs directory. Names are kept
    /// without `.gz`: an archive sent while still uncompressed is the same archive once compressed.
    struct SentArchives {
        let path: String
        private(set) var names: Set<String>

        init(diagnosticsDirectory: String) {
            path = DiagnosticsDirectory(diagnosticsDirectory).sentArchives
            let text = DurableFile.read(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
            names = Set(text.split(separator: "\n").map { Self.uncompressed(String($0)) })
        }

        func contains(_ name: String) -> Bool { names.contains(Self.uncompressed(name)) }

        mutating func record(_ sent: [String], stillPresent present: Set<String>) throws(DurableFile.Failure) {
            names = names.union(sent.map(Self.uncompressed)).intersection(present.map(Self.uncompressed))
            let text = names.sorted().map { $0 + "\n" }.joined()
            try DurableFile.write(Array(text.utf8), to: path)
        }

        static func uncompressed(_ name: String) -> String { name.hasSuffix(".gz") ? String(name.dropLast(3)) : name }
    }
#endif
