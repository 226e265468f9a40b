#if Tools
    import BlackboxUpload

    /// What `blackbox symbols upload` does with each file it found, and the line it prints for it.
    struct SymbolUploadPlan {
        enum Action: Equatable {
            case upload
            case alreadyThere
            case noDebugInfo
            case noBuildID
            /// Another file given has the same build-id and is sent instead.
            case sameBuildID(as: String)
            case sent(UploadOutcome)
        }

        struct Entry {
            var candidate: SymbolFiles.Candidate
            var action: Action

            /// With `--sources`: each build-id's chosen file, sent now or there already.
            var sendsSources: Bool {
                switch action {
                case .upload, .alreadyThere, .sent(.stored): true
                default: false
                }
            }

            var line: String {
                let status =
                    switch action {
                    case .upload: "not sent"
                    case .alreadyThere, .sent(.stored(duplicate: true)): "already there"
                    case .noDebugInfo: "no debug info"
                    case .noBuildID: "no build-id"
                    case .sameBuildID(let other): "same build-id as \(other)"
                    case .sent(.stored(duplicate: false)): "uploaded"
                    case .sent(.rejected(let answer)), .sent(.unauthorized(let answer)): "refused: \(answer)"
                    case .sent(.retryLater(let reason)), .sent(.deferred(let reason)): "failed: \(reason)"
                    }
                return "\(candidate.info.buildID ?? "-")  \(candidate.path)  \(status)"
            }
        }

        var entries: [Entry]

        /// A file is sent when it has debug info and a build-id, once per build-id (the first such file
        /// given wins: name the debug file before the binary, or give only one of them).
        init(_ candidates: [SymbolFiles.Candidate]) {
            var chosen: [String: String] = [:]
            entries = candidates.map { candidate in
                guard let buildID = candidate.info.buildID else {
                    return Entry(candidate: candidate, action: .noBuildID)
                }
                guard candidate.info.hasDebugInfo else { return Entry(candidate: candidate, action: .noDebugInfo) }
                if let other = chosen[buildID] { return Entry(candidate: candidate, action: .sameBuildID(as: other)) }
                chosen[buildID] = candidate.path
                return Entry(candidate: candidate, action: .upload)
            }
        }

        /// The build-ids to ask the collector about, in the order given.
        var buildIDsToAsk: [String] {
            entries.compactMap { $0.action == .upload ? $0.candidate.info.buildID : nil }
        }

        mutating func markPresent(_ present: Set<String>) {
            for index in entries.indices where entries[index].action == .upload {
                if let buildID = entries[index].candidate.info.buildID, present.contains(buildID) {
                    entries[index].action = .alreadyThere
                }
            }
        }

        var summary: String {
            func count(_ matches: (Action) -> Bool) -> Int { entries.filter { matches($0.action) }.count }
            let uploaded = count { $0 == .sent(.stored(duplicate: false)) }
            let there = count { $0 == .alreadyThere || $0 == .sent(.stored(duplicate: true)) }
            let failed = count {
                if case .sent(let outcome) = $0, case .stored = outcome { return false }
                if case .sent = $0 { return true }
                return false
            }
            var line = "uploaded \(uploaded) symbol file\(uploaded == 1 ? "" : "s"), \(there) already there"
            if failed > 0 { line += ", \(failed) not stored" }
            return line
        }
    }
#endif
