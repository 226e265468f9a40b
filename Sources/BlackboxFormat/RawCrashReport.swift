/// A raw report as the signal handler wrote it (format: docs/crash-capture.md), parsed leniently: a
/// report cut short by the dying process still yields everything before the cut.
public struct RawCrashReport: Sendable {
    public struct Image: Sendable {
        public var bias: UInt64
        public var start: UInt64
        public var end: UInt64
        public var buildID: String?
        public var path: String
    }

    /// Another thread of the process, as the capture found it (`thread-begin` … `thread-end`).
    public struct OtherThread: Sendable {
        public var id: Int32
        /// `ok`, `faulted` (frames up to the fault), `no-answer`, `blocks-signals` or `exited`.
        public var status: String
        /// `libunwind`, `frame-pointers` or `none`.
        public var walk: String
        public var name: String?
        /// The scope its current task was in when it answered (`thread-scope` lines).
        public var scope: [String: String] = [:]
        public var frames: [UInt64] = []
        public var truncated = false
    }

    public var formatVersion = 0
    /// `key value` lines from the header that Swift prepared at install time (app, host, start time…).
    public var header: [String: String] = [:]
    public var metadata: [String: String] = [:]
    public var annotations: [String: String] = [:]
    /// Whether the handler looked for the crashed thread's scope (only once a scope was ever entered),
    /// and the fields of the one it found.
    public var scopeLookedUp = false
    public var scope: [String: String] = [:]
    public var signal: Int32?
    public var signalName: String?
    public var code: Int32?
    public var faultAddress: UInt64?
    public var senderPID: Int32?
    public var timeSeconds: Int64?
    public var timeNanoseconds: Int64 = 0
    public var pid: Int32?
    public var threadID: Int32?
    public var threadName: String?
    public var registers: [(name: String, value: UInt64)] = []
    /// `fault-access`: `read`, `write` or `execute`.
    public var faultAccess: String?
    /// `map` lines: the mappings around the fault address (`fault`, `fault-below`, `fault-above`) and
    /// the stack pointer (`stack`…), by role.
    public var mappings: [String: CrashReport.MemoryMapping] = [:]
    public var fatalMessage: String?
    public var framePointerFrames: [UInt64] = []
    public var framePointerWalkFinished = false
    public var unwindFrames: [UInt64] = []
    /// (frames before the gap, frames omitted)
    public var unwindOmission: (after: Int, count: Int)?
    public var unwindStatus: String?
    public var images: [Image] = []
    public var lateImages: [(base: UInt64, path: String)] = []
    public var journalStart: UInt64?
    public var journalBytes: [UInt8] = []
    /// Candidate Swift async caller chains: a frame of the frame-pointer walk and the resume
    /// addresses its would-be async context leads to (`async` lines).
    public var asyncCandidates: [(frame: Int, resumes: [UInt64])] = []
    public var otherThreads: [OtherThread] = []
    /// Threads beyond the capture's limit, not captured.
    public var omittedThreads = 0
    /// Why the other threads are absent (`not-prepared`, `no-proc`), when they are.
    public var threadsUnavailable: String?
    public var threadCaptureNanoseconds: Int?
    public var nestedFaults: [String] = []
    public var watchdogFired = false
    public var complete = false
    /// Lines past what the signal handler ever writes (see `Limits`), dropped.
    public var droppedLines = 0

    /// What the signal handler writes at most (Sources/CCrashHandler: 512 frames of the crashed
    /// thread, 512 other threads of 128 frames, 32 annotations…), with room to spare. Anything past
    /// it did not come from the handler: the parser drops it, so a report built from an uploaded raw
    /// report is never larger than a real one could be.
    public enum Limits {
        public static let frames = 1_024
        public static let threads = 512
        public static let threadFrames = 256
        public static let images = 4_096
        /// Registers, header fields, metadata, annotations, async chains and their resumes, faults.
        public static let entries = 256
    }

    public enum ParseError: Error, CustomStringConvertible {
        case notARawReport
        public var description: String { "not a Blackbox raw crash report (missing the first line)" }
    }

    public init(bytes: [UInt8]) throws(ParseError) {
        var cursor = 0
        func nextLine() -> Substring? {
            guard cursor < bytes.count else { return nil }
            let end = bytes[cursor...].firstIndex(of: 0x0A) ?? bytes.count
            let line = String(decoding: bytes[cursor..<end], as: UTF8.self)
            cursor = end + 1
            return Substring(line)
        }
        // `count` comes from the file: compared without adding, so no value can overflow the cursor.
        func blob(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, cursor <= bytes.count, count <= bytes.count - cursor else { return nil }
            defer { cursor += count + 1 }  // the blob is followed by a newline
            return bytes[cursor..<cursor + count]
        }

        var dropped = 0
        func admit(_ count: Int, _ limit: Int) -> Bool {
            if count < limit { return true }
            dropped += 1
            return false
        }
        defer { droppedLines = dropped }

        guard let first = nextLine(), first.hasPrefix("blackbox-raw-crash ") else { throw .notARawReport }
        formatVersion = Int(first.dropFirst("blackbox-raw-crash ".count)) ?? 0
        while let line = nextLine() {
            let (key, value) = Self.split(line)
            switch key {
            case "signal":
                let (number, name) = Self.split(value)
                signal = Int32(number)
                signalName = String(name)
            case "code": code = Int32(value)
            case "address": faultAddress = Self.hex(value)
            case "sender-pid": senderPID = Int32(value)
            case "time":
                let (seconds, nanoseconds) = Self.split(value)
                timeSeconds = Int64(seconds)
                timeNanoseconds = Int64(nanoseconds) ?? 0
            case "pid": pid = Int32(value)
            case "tid": threadID = Int32(value)
            case "thread": threadName = value.isEmpty ? nil : String(value)
            case "register":
                let (name, number) = Self.split(value)
                guard let number = Self.hex(number), admit(registers.count, Limits.entries) else { continue }
                registers.append((String(name), number))
            case "fault-access": if ["read", "write", "execute"].contains(value) { faultAccess = String(value) }
            case "map":
                let (role, line) = Self.split(value)
                guard Self.mapRoles.contains(role), let mapping = CrashReport.MemoryMapping(mapsLine: line) else {
                    continue
                }
                mappings[String(role)] = mapping
            case "message":
                guard let count = Int(value), let text = blob(count) else { return }
                fatalMessage = String(decoding: text, as: UTF8.self)
            case "fp":
                guard let pc = Self.hex(value), admit(framePointerFrames.count, Limits.frames) else { continue }
                framePointerFrames.append(pc)
            case "fp-end": framePointerWalkFinished = true
            case "unwind":
                guard let pc = Self.hex(value), admit(unwindFrames.count, Limits.frames) else { continue }
                unwindFrames.append(pc)
            case "unwind-omitted": unwindOmission = (unwindFrames.count, Self.count(value))
            case "unwind-end": unwindStatus = String(Self.split(value).1)
            case "image":
                let parts = value.split(separator: " ", maxSplits: 4)
                guard parts.count == 5, let bias = Self.hex(parts[0]), let start = Self.hex(parts[1]),
                    let end = Self.hex(parts[2]), admit(images.count, Limits.images)
                else { continue }
                images.append(
                    Image(
                        bias: bias, start: start, end: end, buildID: parts[3] == "-" ? nil : String(parts[3]),
                        path: String(parts[4])))
            case "late-image":
                let (base, path) = Self.split(value)
                guard let base = Self.hex(base), admit(lateImages.count, Limits.images) else { continue }
                lateImages.append((base, String(path)))
            case "journal":
                let (start, count) = Self.split(value)
                guard let start = UInt64(start), let count = Int(count), let bytes = blob(count) else { return }
                journalStart = start
                journalBytes = Array(bytes)
            case "async":
                let parts = value.split(separator: " ")
                guard let frame = parts.first.flatMap({ Int($0) }) else { continue }
                let resumes = parts.dropFirst(1).prefix(Limits.entries).compactMap { Self.hex($0) }
                guard !resumes.isEmpty, admit(asyncCandidates.count, Limits.entries) else { continue }
                asyncCandidates.append((frame, resumes))
            case "thread-begin":
                let parts = value.split(separator: " ")
                guard parts.count >= 2, let id = Int32(parts[0]), admit(otherThreads.count, Limits.threads) else {
                    continue
                }
                otherThreads.append(
                    OtherThread(id: id, status: String(parts[1]), walk: parts.count > 2 ? String(parts[2]) : "none"))
            case "thread-name": if !otherThreads.isEmpty { otherThreads[otherThreads.count - 1].name = String(value) }
            case "thread-scope":
                let (name, text) = Self.split(value)
                guard let last = otherThreads.indices.last, admit(otherThreads[last].scope.count, Limits.entries)
                else { continue }
                otherThreads[last].scope[String(name)] = String(text)
            case "thread-frame":
                guard let last = otherThreads.indices.last, let pc = Self.hex(value),
                    admit(otherThreads[last].frames.count, Limits.threadFrames)
                else { continue }
                otherThreads[last].frames.append(pc)
            case "thread-end":
                if !otherThreads.isEmpty {
                    otherThreads[otherThreads.count - 1].truncated = value.hasSuffix(" truncated")
                }
            case "threads-omitted": omittedThreads = Self.count(value)
            case "threads-unavailable": threadsUnavailable = String(value)
            case "threads-end": threadCaptureNanoseconds = Int(value).map { max(0, $0) }
            case "nested-fault": if admit(nestedFaults.count, Limits.entries) { nestedFaults.append(String(value)) }
            case "nested-fault-unrecoverable": nestedFaults.append("unrecoverable")
            case "watchdog-timeout": watchdogFired = true
            case "end": complete = true
            case "annotation":
                let (name, text) = Self.split(value)
                if admit(annotations.count, Limits.entries) { annotations[String(name)] = String(text) }
            case "scope-looked-up": scopeLookedUp = true
            case "scope":
                let (name, text) = Self.split(value)
                if admit(scope.count, Limits.entries) { scope[String(name)] = String(text) }
            case "metadata":
                let (name, text) = Self.split(value)
                if admit(metadata.count, Limits.entries) { metadata[String(name)] = String(text) }
            case "": continue
            default: if admit(header.count, Limits.entries) { header[String(key)] = String(value) }
            }
        }
    }

    /// The addresses the handler writes the mappings around, each with its neighbours.
    private static let mapRoles: Set<Substring> = [
        "fault", "fault-below", "fault-above", "stack", "stack-below", "stack-above",
    ]

    private static func split(_ line: Substring) -> (Substring, Substring) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (line[..<space], line[line.index(after: space)...])
    }

    /// A count the handler wrote (omitted frames or threads): never negative, and bounded so that
    /// whatever adds or prints it later cannot overflow.
    private static func count(_ text: Substring) -> Int {
        min(max(Int(text) ?? 0, 0), Int(Int32.max))
    }

    private static func hex(_ text: Substring) -> UInt64? { address(fromHex: text) }
}

extension RawCrashReport {
    /// The mappings the handler wrote around one of its addresses (`fault`, `stack`); nil when it
    /// wrote none.
    func neighbourhood(_ role: String) -> CrashReport.MemoryNeighbourhood? {
        let found = CrashReport.MemoryNeighbourhood(
            holding: mappings[role], below: mappings[role + "-below"], above: mappings[role + "-above"])
        return found == CrashReport.MemoryNeighbourhood() ? nil : found
    }
}
