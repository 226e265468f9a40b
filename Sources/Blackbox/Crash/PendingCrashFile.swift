/// A file in `crashes/pending/`, by its name. The signal handler writes
/// `crash-<seconds>-<pid>-<signal>.raw`; processing renames it to
/// `<that>.processing-<processor pid>-<attempt>` while it works and, when an attempt ended with the
/// processor's death for another reason, to `<that>.retry-<attempts>`. The name is the whole state,
/// so that a crash at any point leaves something the next start can judge.
struct PendingCrashFile: Equatable {
    /// `crash-<seconds>-<pid>-<signal>.raw`: the name the handler gave it.
    var rawName: String
    /// Attempts at processing it that ended with the processing process's death.
    var attempts: Int
    /// Set while a process is processing it.
    var processor: Processor?

    struct Processor: Equatable {
        /// Nil for a name left by an earlier version (`.raw.processing`).
        var pid: Int32?
        var attempt: Int
    }

    init(rawName: String, attempts: Int = 0, processor: Processor? = nil) {
        self.rawName = rawName
        self.attempts = attempts
        self.processor = processor
    }

    init?(name: String) {
        guard let end = name.firstRange(of: ".raw") else { return nil }
        rawName = String(name[..<end.upperBound])
        let state = name[end.upperBound...]
        guard rawName.hasPrefix("crash-") else { return nil }
        if state.isEmpty {
            attempts = 0
        } else if state == ".processing" {
            attempts = 0
            processor = Processor(pid: nil, attempt: 1)
        } else if state.hasPrefix(".processing-") {
            let parts = state.dropFirst(".processing-".count).split(separator: "-")
            guard parts.count == 2, let pid = Int32(parts[0]), let attempt = Int(parts[1]), attempt > 0,
                attempt < 1_000
            else { return nil }
            attempts = attempt - 1
            processor = Processor(pid: pid, attempt: attempt)
        } else if state.hasPrefix(".retry-") {
            guard let count = Int(state.dropFirst(".retry-".count)), count > 0, count < 1_000 else { return nil }
            attempts = count
        } else {
            return nil
        }
    }

    var name: String {
        if let processor {
            guard let pid = processor.pid else { return rawName + ".processing" }
            return rawName + ".processing-\(pid)-\(processor.attempt)"
        }
        return attempts == 0 ? rawName : rawName + ".retry-\(attempts)"
    }

    /// The pid of the process that crashed, from the handler's name.
    var writerPID: Int32? {
        let parts = rawName.split(separator: "-")
        return parts.count >= 4 ? Int32(parts[2]) : nil
    }

    /// When it crashed (whole seconds since the epoch), from the handler's name.
    var crashSeconds: Double? {
        let parts = rawName.split(separator: "-")
        return parts.count >= 4 ? Double(parts[1]) : nil
    }

    /// The same file, taken for processing by `pid`.
    func takenBy(_ pid: Int32) -> PendingCrashFile {
        PendingCrashFile(rawName: rawName, attempts: attempts, processor: Processor(pid: pid, attempt: attempts + 1))
    }

    /// The same file after an attempt that ended with its processor's death for no known reason.
    func afterFailedAttempt() -> PendingCrashFile {
        PendingCrashFile(rawName: rawName, attempts: processor?.attempt ?? attempts + 1)
    }

    /// The same file after an attempt that is not held against it (its processor crashed elsewhere).
    func released() -> PendingCrashFile {
        PendingCrashFile(rawName: rawName, attempts: attempts)
    }
}
