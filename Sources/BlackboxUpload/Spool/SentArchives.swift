#if Upload
    import Blackbox
    import BlackboxFormat

    /// The log archives already put into a bundle, so each is uploaded once: one file name per line in
    /// `<dir>/outbox/sent-archives`, written durably after the bundle that holds them is durable (a crash
    /// in between sends an archive twice, never zero times). Names of archives that aging has deleted
    /// are dropped on each write, so the list stays as short as the logs directory.
    struct SentArchives {
        let path: String
        private(set) var names: Set<String>

        init(diagnosticsDirectory: String) {
            path = DiagnosticsDirectory(diagnosticsDirectory).sentArchives
            let text = DurableFile.read(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
            names = Set(text.split(separator: "\n").map(String.init))
        }

        func contains(_ name: String) -> Bool { names.contains(name) }

        mutating func record(_ sent: [String], stillPresent present: Set<String>) throws(DurableFile.Failure) {
            names = names.union(sent).intersection(present)
            let text = names.sorted().map { $0 + "\n" }.joined()
            try DurableFile.write(Array(text.utf8), to: path)
        }
    }
#endif
