/// A raw report as the signal handler wrote it (format: docs/crash-capture.md), parsed leniently: a
/// report cut short by the dying process still yields everything before the cut.
struct RawCrashReport {
    struct Image {
        var bias: UInt64
        var start: UInt64
        var end: UInt64
        var buildID: String?
        var path: String
    }

    /// Another thread of the process, as the capture found it (`thread-begin` … `thread-end`).
    struct OtherThread {
        var id: Int32
        /// `ok`, `faulted` (frames up to the fault), `no-answer`, `blocks-signals` or `exited`.
        var status: String
        /// `libunwind`, `frame-pointers` or `none`.
        var walk: String
        var name: String?
        var frames: [UInt64] = []
        var truncated = false
    }

    var formatVersion = 0
    /// `key value` lines from the header that Swift prepared at install time (app, host, start time…).
    var header: [String: String] = [:]
    var metadata: [String: String] = [:]
    var annotations: [String: String] = [:]
    var signal: Int32?
    var signalName: String?
    var code: Int32?
    var faultAddress: UInt64?
    var senderPID: Int32?
    var timeSeconds: Int64?
    var timeNanoseconds: Int64 = 0
    var pid: Int32?
    var threadID: Int32?
    var threadName: String?
    var registers: [(name: String, value: UInt64)] = []
    var fatalMessage: String?
    var framePointerFrames: [UInt64] = []
    var framePointerWalkFinished = false
    var unwindFrames: [UInt64] = []
    /// (frames before the gap, frames omitted)
    var unwindOmission: (after: Int, count: Int)?
    var unwindStatus: String?
    var images: [Image] = []
    var lateImages: [(base: UInt64, path: String)] = []
    var journalStart: UInt64?
    var journalBytes: [UInt8] = []
    /// Candidate Swift async caller chains: a frame of the frame-pointer walk and the resume
    /// addresses its would-be async context leads to (`async` lines).
    var asyncCandidates: [(frame: Int, resumes: [UInt64])] = []
    var otherThreads: [OtherThread] = []
    /// Threads beyond the capture's limit, not captured.
    var omittedThreads = 0
    /// Why the other threads are absent (`not-prepared`, `no-proc`), when they are.
    var threadsUnavailable: String?
    var threadCaptureNanoseconds: Int?
    var nestedFaults: [String] = []
    var watchdogFired = false
    var complete = false

    public enum ParseError: Error, CustomStringConvertible {
        case notARawReport
        public var description: String { "not a Blackbox raw crash report (missing the first line)" }
    }

    init(bytes: [UInt8]) throws(ParseError) {
        var cursor = 0
        func nextLine() -> Substring? {
            guard cursor < bytes.count else { return nil }
            let end = bytes[cursor...].firstIndex(of: 0x0A) ?? bytes.count
            let line = String(decoding: bytes[cursor..<end], as: UTF8.self)
            cursor = end + 1
            return Substring(line)
        }
        func blob(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, cursor + count <= bytes.count else { return nil }
            defer { cursor += count + 1 }  // the blob is followed by a newline
            return bytes[cursor..<cursor + count]
        }

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
                if let number = Self.hex(number) { registers.append((String(name), number)) }
            case "message":
                guard let count = Int(value), let text = blob(count) else { return }
                fatalMessage = String(decoding: text, as: UTF8.self)
            case "fp": if let pc = Self.hex(value) { framePointerFrames.append(pc) }
            case "fp-end": framePointerWalkFinished = true
            case "unwind": if let pc = Self.hex(value) { unwindFrames.append(pc) }
            case "unwind-omitted": unwindOmission = (unwindFrames.count, Int(value) ?? 0)
            case "unwind-end": unwindStatus = String(Self.split(value).1)
            case "image":
                let parts = value.split(separator: " ", maxSplits: 4)
                guard parts.count == 5, let bias = Self.hex(parts[0]), let start = Self.hex(parts[1]),
                    let end = Self.hex(parts[2])
                else { continue }
                images.append(
                    Image(
                        bias: bias, start: start, end: end, buildID: parts[3] == "-" ? nil : String(parts[3]),
                        path: String(parts[4])))
            case "late-image":
                let (base, path) = Self.split(value)
                if let base = Self.hex(base) { lateImages.append((base, String(path))) }
            case "journal":
                let (start, count) = Self.split(value)
                guard let start = UInt64(start), let count = Int(count), let bytes = blob(count) else { return }
                journalStart = start
                journalBytes = Array(bytes)
            case "async":
                let parts = value.split(separator: " ")
                guard let frame = parts.first.flatMap({ Int($0) }) else { continue }
                let resumes = parts.dropFirst().compactMap { Self.hex($0) }
                if !resumes.isEmpty { asyncCandidates.append((frame, resumes)) }
            case "thread-begin":
                let parts = value.split(separator: " ")
                guard parts.count >= 2, let id = Int32(parts[0]) else { continue }
                otherThreads.append(
                    OtherThread(id: id, status: String(parts[1]), walk: parts.count > 2 ? String(parts[2]) : "none"))
            case "thread-name": if !otherThreads.isEmpty { otherThreads[otherThreads.count - 1].name = String(value) }
            case "thread-frame":
                if !otherThreads.isEmpty, let pc = Self.hex(value) {
                    otherThreads[otherThreads.count - 1].frames.append(pc)
                }
            case "thread-end":
                if !otherThreads.isEmpty {
                    otherThreads[otherThreads.count - 1].truncated = value.hasSuffix(" truncated")
                }
            case "threads-omitted": omittedThreads = Int(value) ?? 0
            case "threads-unavailable": threadsUnavailable = String(value)
            case "threads-end": threadCaptureNanoseconds = Int(value)
            case "nested-fault": nestedFaults.append(String(value))
            case "nested-fault-unrecoverable": nestedFaults.append("unrecoverable")
            case "watchdog-timeout": watchdogFired = true
            case "end": complete = true
            case "annotation":
                let (name, text) = Self.split(value)
                annotations[String(name)] = String(text)
            case "metadata":
                let (name, text) = Self.split(value)
                metadata[String(name)] = String(text)
            case "": continue
            default: header[String(key)] = String(value)
            }
        }
    }

    private static func split(_ line: Substring) -> (Substring, Substring) {
        guard let space = line.firstIndex(of: " ") else { return (line, "") }
        return (line[..<space], line[line.index(after: space)...])
    }

    private static func hex(_ text: Substring) -> UInt64? {
        text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : nil
    }
}
