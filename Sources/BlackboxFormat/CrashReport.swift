#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A crash or non-fatal report: the contract between the app (which writes it), the CLI (which shows
/// it) and the collector (which groups it). The exact JSON is documented in docs/crash-report.md;
/// addresses are hex strings (`"0x55d0c0de1234"`) because JSON numbers lose precision past 2^53.
public struct CrashReport: Codable, Sendable, Equatable {
    /// Bumped on any change a reader must know about; readers reject versions they do not know.
    /// 2: `threads` (every thread's stack). Version 1 reports decode with `threads` nil.
    public static let currentFormatVersion = 2

    public enum Kind: String, Codable, Sendable, CaseIterable {
        case crash
        case nonfatal
        /// A run that ended without a clean exit and without a crash report of its own: SIGKILL, the
        /// OOM killer, a power loss. Written by the next start; `termination` says what is known.
        case termination
        /// A watched thread, queue or loop missed its deadline (`Blackbox.watchForHangs`); the process
        /// went on. The unresponsive thread is `thread` and first in `threads`.
        case hang
        /// An error the app captured (`Blackbox.capture`): `reason` is its type and description,
        /// `metadata["error.type"]` its type, the frames where it was captured.
        case error
    }

    public var formatVersion: Int
    public var id: UUID
    public var kind: Kind
    /// True when the raw report was cut short (the process died while writing it, or a section
    /// faulted): everything present is real, but something is missing. `notes` says what.
    public var partial: Bool
    public var app: App
    public var host: Host
    public var process: ProcessDetails
    /// Absent for non-fatal reports.
    public var signal: SignalDetails?
    /// The Swift runtime's fatal-error text, when it kept one.
    public var fatalMessage: String?
    /// One line saying why: `Swift runtime failure: Index out of range`, the fatal message's first
    /// line, or the failed assertion's message.
    public var reason: String?
    public var thread: ThreadDetails
    public var registers: [Register]
    /// Every thread of the process when the report was written, the crashed (or reporting, or in a
    /// hang report the unresponsive) thread first, marked `crashed`, with the same frames as `frames`. Nil in version 1 reports and where the other threads
    /// could not be captured (`notes` says why).
    public var threads: [ThreadStack]?
    /// The crashed thread's frames, innermost first.
    public var frames: [Frame]
    /// Frames left out of the middle of a very deep stack (recursion); they sat between the frame at
    /// index `omittedAfterIndex` and the next one.
    public var omittedFrames: Omission?
    /// Which walk `frames` came from: `libunwind`, `frame-pointers` or `runtime` (Swift's `Backtrace`).
    public var frameSource: String
    public var symbolicated: Bool
    public var images: [Image]
    /// The last log lines before the report, oldest first.
    public var logTail: [String]
    public var metadata: [String: String]
    /// The crash-time annotations the app had set (`CrashAnnotations`); nil when none.
    public var annotations: [String: String]?
    /// The scope of the task that crashed or reported (`Blackbox.withScope`: route, method, request
    /// id, trace id…); nil when it had none.
    public var scope: [String: String]?
    /// What processing noticed: missing sections, build-id mismatches, absent symbolizer...
    public var notes: [String]
    /// For `kind == .termination`: when the run was last seen alive and what Linux says killed it.
    public var termination: TerminationDetails?

    public init(
        id: UUID = UUID(), kind: Kind, app: App, host: Host, process: ProcessDetails, thread: ThreadDetails
    ) {
        self.formatVersion = Self.currentFormatVersion
        self.id = id
        self.kind = kind
        self.partial = false
        self.app = app
        self.host = host
        self.process = process
        self.signal = nil
        self.fatalMessage = nil
        self.reason = nil
        self.thread = thread
        self.registers = []
        self.threads = nil
        self.frames = []
        self.omittedFrames = nil
        self.frameSource = "none"
        self.symbolicated = false
        self.images = []
        self.logTail = []
        self.metadata = [:]
        self.annotations = nil
        self.scope = nil
        self.notes = []
        self.termination = nil
    }

    public struct App: Codable, Sendable, Equatable {
        public var name: String
        public var version: String?
        public var build: String?
        public init(name: String, version: String? = nil, build: String? = nil) {
            self.name = name
            self.version = version
            self.build = build
        }
    }

    public struct Host: Codable, Sendable, Equatable {
        public var name: String
        /// e.g. `Debian GNU/Linux 12 (bookworm)`.
        public var os: String
        public var kernel: String
        public var architecture: String
        public init(name: String, os: String, kernel: String, architecture: String) {
            self.name = name
            self.os = os
            self.kernel = kernel
            self.architecture = architecture
        }
    }

    public struct ProcessDetails: Codable, Sendable, Equatable {
        public var pid: Int32
        public var path: String?
        public var startTime: Date?
        public var crashTime: Date
        public init(pid: Int32, path: String? = nil, startTime: Date? = nil, crashTime: Date) {
            self.pid = pid
            self.path = path
            self.startTime = startTime.map(ReportTime.milliseconds)
            self.crashTime = ReportTime.milliseconds(crashTime)
        }
    }

    public struct SignalDetails: Codable, Sendable, Equatable {
        public var number: Int32
        public var name: String
        public var code: Int32
        /// e.g. `SEGV_MAPERR`, `ILL_ILLOPN`, `SI_TKILL`.
        public var codeName: String?
        public var faultAddress: String
        /// Set when another process sent the signal (`kill -SEGV`).
        public var senderPID: Int32?
        /// How the faulting instruction used the memory: `read`, `write` or `execute` (the page fault's
        /// error code; x86_64 only, absent elsewhere and for faults that are not page faults).
        public var access: String?
        /// The memory map around the fault address and around the stack pointer at crash time (SIGSEGV
        /// and SIGBUS the kernel raised); nil in reports of older versions.
        public var faultMemory: MemoryNeighbourhood?
        public var stackMemory: MemoryNeighbourhood?
        public init(
            number: Int32, name: String, code: Int32, codeName: String?, faultAddress: String, senderPID: Int32? = nil
        ) {
            self.number = number
            self.name = name
            self.code = code
            self.codeName = codeName
            self.faultAddress = faultAddress
            self.senderPID = senderPID
        }
    }

    public struct ThreadDetails: Codable, Sendable, Equatable {
        public var id: Int32
        public var name: String?
        public init(id: Int32, name: String?) {
            self.id = id
            self.name = name
        }
    }

    /// How a run that left no report of its own ended, as far as the next start can tell.
    public struct TerminationDetails: Codable, Sendable, Equatable {
        /// `oom-killer` (an OOM-kill counter of its memory cgroup, or of the machine, went up while it
        /// ran), `machine-restart` (it was recorded under another boot), or `unknown` (SIGKILL from
        /// someone, an unhandled SIGTERM, a watchdog…).
        public var cause: String
        /// The time of its last log line, else its start: it died after this.
        public var lastSeenAlive: Date
        /// When the next start noticed: it died before this.
        public var detectedAt: Date
        /// The memory cgroup's `oom_kill` counter when the run started and when the death was noticed.
        public var cgroupOOMKillsBefore: Int?
        public var cgroupOOMKillsAfter: Int?
        public init(
            cause: String, lastSeenAlive: Date, detectedAt: Date, cgroupOOMKillsBefore: Int? = nil,
            cgroupOOMKillsAfter: Int? = nil
        ) {
            self.cause = cause
            self.lastSeenAlive = lastSeenAlive
            self.detectedAt = detectedAt
            self.cgroupOOMKillsBefore = cgroupOOMKillsBefore
            self.cgroupOOMKillsAfter = cgroupOOMKillsAfter
        }
    }

    /// One thread's stack.
    public struct ThreadStack: Codable, Sendable, Equatable {
        public var id: Int32
        /// The kernel's name for it (`/proc/<pid>/task/<tid>/comm`, at most 15 bytes).
        public var name: String?
        public var crashed: Bool
        /// Which walk found the frames: `libunwind`, `frame-pointers`, or `none`.
        public var frameSource: String
        /// Why the frames are missing or short, when they are: `no-answer` (the thread did not
        /// answer in time), `blocks-signals` (it blocks every signal the capture can send),
        /// `exited`, `faulted` (the walk faulted; the frames before the fault are kept),
        /// `truncated` (more frames than the capture keeps).
        public var problem: String?
        /// The scope (request) the thread's current task was in when it was captured; nil when none
        /// (or for the crashed thread, whose scope is the report's `scope`).
        public var scope: [String: String]?
        /// Innermost first.
        public var frames: [Frame]
        public init(
            id: Int32, name: String?, crashed: Bool, frameSource: String, problem: String? = nil,
            scope: [String: String]? = nil, frames: [Frame]
        ) {
            self.id = id
            self.name = name
            self.crashed = crashed
            self.frameSource = frameSource
            self.problem = problem
            self.scope = scope
            self.frames = frames
        }
    }

    public struct Register: Codable, Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public struct Frame: Codable, Sendable, Equatable {
        public var index: Int
        /// The absolute program counter (frame 0) or return address (the others).
        public var address: String
        /// Index into `images`, when the address falls inside one.
        public var imageIndex: Int?
        /// `address` minus the image's load bias: what `llvm-symbolizer --obj=<image>` expects.
        public var imageOffset: String?
        /// Innermost first: inlined frames, then the function that contains them. Empty when not
        /// symbolicated.
        public var symbols: [Symbol]
        /// Where `symbols` came from; nil when the frame is not symbolicated (or the report predates
        /// this field).
        public var symbolication: Symbolication?
        /// True for a Swift async caller: the resume point of a function that awaited the frame
        /// before it (`address` is where it resumes, not a return address). Nil otherwise.
        public var asyncResume: Bool?
        /// Whether the frame is the app's own code, when the producer knows (a Sentry SDK's `in_app`);
        /// nil: decided from the image (`CrashSignature`, the report page).
        public var inApp: Bool?
        /// The source lines around the frame's line, when the producer sent them (a Sentry SDK's
        /// `pre_context`, `context_line` and `post_context`); nil otherwise.
        public var sourceContext: SourceContext?

        /// The address to look up in the image: a return address is one past its call instruction,
        /// so every frame but a thread's first and the async resume points is looked up one earlier.
        public var lookupAdjustment: UInt64 { index == 0 || asyncResume == true ? 0 : 1 }
        public init(
            index: Int, address: String, imageIndex: Int? = nil, imageOffset: String? = nil, symbols: [Symbol] = [],
            symbolication: Symbolication? = nil
        ) {
            self.index = index
            self.address = address
            self.imageIndex = imageIndex
            self.imageOffset = imageOffset
            self.symbols = symbols
            self.symbolication = symbolication
        }
    }

    /// A frame's line with the lines before and after it, as the producer read them.
    public struct SourceContext: Codable, Sendable, Equatable {
        public var before: [String]
        public var line: String
        public var after: [String]
        public init(before: [String], line: String, after: [String]) {
            self.before = before
            self.line = line
            self.after = after
        }
    }

    /// How a frame was named.
    public enum Symbolication: String, Codable, Sendable {
        /// From DWARF: file:line and inlined frames where the compiler kept them.
        case debugInfo = "debug-info"
        /// From the ELF symbol table: the function's name only.
        case symbolTable = "symbol-table"
    }

    public struct Symbol: Codable, Sendable, Equatable {
        /// Demangled.
        public var function: String
        public var mangledName: String?
        public var file: String?
        public var line: Int?
        public var column: Int?
        public var inlined: Bool
        public init(
            function: String, mangledName: String? = nil, file: String? = nil, line: Int? = nil, column: Int? = nil,
            inlined: Bool = false
        ) {
            self.function = function
            self.mangledName = mangledName
            self.file = file
            self.line = line
            self.column = column
            self.inlined = inlined
        }
    }

    public struct Image: Codable, Sendable, Equatable {
        public var path: String
        /// Load bias: subtract it from an address to get the ELF file's address.
        public var bias: String
        public var start: String
        public var end: String
        /// NT_GNU_BUILD_ID as lowercase hex, as `readelf -n` prints it.
        public var buildID: String?
        /// False when the file on disk at processing time had a different build-id (it was rebuilt):
        /// its frames are then left unsymbolicated rather than named wrongly.
        public var buildIDMatches: Bool?
        public init(path: String, bias: String, start: String, end: String, buildID: String?) {
            self.path = path
            self.bias = bias
            self.start = start
            self.end = end
            self.buildID = buildID
        }
    }

    public struct Omission: Codable, Sendable, Equatable {
        public var omittedAfterIndex: Int
        public var count: Int
        public init(omittedAfterIndex: Int, count: Int) {
            self.omittedAfterIndex = omittedAfterIndex
            self.count = count
        }
    }
}

extension CrashReport {
    /// The encoder every writer uses: ISO-8601 UTC dates with milliseconds, sorted keys (stable
    /// files, readable diffs).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ReportTime.format(date))
        }
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }

    /// Accepts dates with or without fractional seconds.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ReportTime.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not an ISO-8601 date: \(text)")
            }
            return date
        }
        return decoder
    }

    /// Checks `formatVersion` and then decodes `Value` from the same decoder: one parse of the JSON
    /// (decoding a version struct first parsed every upload's manifest and reports twice).
    private struct Versioned<Value: Decodable>: Decodable {
        static var newestKey: CodingUserInfoKey { CodingUserInfoKey(rawValue: "blackbox.newestFormatVersion")! }
        private enum Key: String, CodingKey { case formatVersion }
        var value: Value

        init(from decoder: any Decoder) throws {
            let version = try decoder.container(keyedBy: Key.self).decode(Int.self, forKey: .formatVersion)
            let newest = decoder.userInfo[Self.newestKey] as? Int ?? Int.max
            guard version <= newest else { throw DecodingProblem.unsupportedVersion(version) }
            value = try Value(from: decoder)
        }
    }

    public enum DecodingProblem: Error, CustomStringConvertible {
        case unsupportedVersion(Int)
        public var description: String {
            switch self {
            case .unsupportedVersion(let version):
                "crash report format version \(version) is newer than this reader (\(CrashReport.currentFormatVersion))"
            }
        }
    }

    /// Decodes a report and refuses format versions this reader does not know.
    public static func decode(_ data: Data) throws -> CrashReport {
        try decodeVersioned(CrashReport.self, from: data, newest: currentFormatVersion)
    }

    /// Reads `formatVersion` first, so that a newer format is refused by name rather than by whatever
    /// field happens not to decode.
    static func decodeVersioned<T: Decodable>(_ type: T.Type, from data: Data, newest: Int) throws -> T {
        let decoder = makeDecoder()
        decoder.userInfo[Versioned<T>.newestKey] = newest
        return try decoder.decode(Versioned<T>.self, from: data).value
    }

    /// The frames of every thread, for symbolication: `frames` (the crashed thread's) first, then
    /// each other thread's, in `threads` order.
    public var stacks: [[Frame]] {
        [frames] + (threads?.dropFirst().map(\.frames) ?? [])
    }

    /// Replaces the frames of one of `stacks`, keeping the crashed thread's in `frames` and
    /// `threads[0]` the same.
    public mutating func setFrames(_ newFrames: [Frame], ofStack stack: Int) {
        if stack == 0 {
            frames = newFrames
            if threads?.first?.crashed == true { threads?[0].frames = newFrames }
        } else if let threads, threads.indices.contains(stack) {
            self.threads?[stack].frames = newFrames
        }
    }

    /// The innermost named function of a frame, if symbolicated.
    public func functionName(ofFrame index: Int) -> String? {
        guard frames.indices.contains(index) else { return nil }
        return frames[index].symbols.first?.function
    }
}

/// Report times are whole milliseconds, formatted by hand: Foundation's fractional-second formatting
/// truncates binary fractions (…273.123 prints as .122), which would break round trips.
package enum ReportTime {
    package static func milliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// Years 1 to 9999: a time from a file (a raw report's `time` line, a decoded report) can be
    /// anything, and converting a larger one to milliseconds would overflow `Int64`.
    private static let representable = -62_135_596_800.0...253_402_300_799.0

    package static func format(_ date: Date) -> String {
        let since1970 = date.timeIntervalSince1970
        let clamped = since1970.isNaN ? 0 : min(max(since1970, representable.lowerBound), representable.upperBound)
        let total = Int64((clamped * 1000).rounded())
        let seconds = total.quotientAndRemainderFlooring(by: 1000)
        let whole = Date(timeIntervalSince1970: Double(seconds.quotient)).formatted(Date.ISO8601FormatStyle())
        let millis = String(seconds.remainder)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - millis.count) + millis + "Z"
    }

    package static func parse(_ text: String) -> Date? {
        guard text.hasSuffix("Z") else { return try? Date.ISO8601FormatStyle().parse(text) }
        // From a file or the network: "Z" alone or ".Z" must be refused, not trapped on (found by
        // HostileInputFuzzTests).
        let parts = text.dropLast().split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, !first.isEmpty, let whole = try? Date.ISO8601FormatStyle().parse(first + "Z")
        else { return nil }
        guard parts.count == 2 else { return whole }
        let digits = parts[1].prefix(3)
        guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let fraction = Int64(digits),
            digits.count > 0
        else { return nil }
        let millis = fraction * [1, 100, 10, 1][digits.count]
        return Date(timeIntervalSince1970: Double(Int64(whole.timeIntervalSince1970) * 1000 + millis) / 1000)
    }
}

extension Int64 {
    fileprivate func quotientAndRemainderFlooring(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (q, r) = quotientAndRemainder(dividingBy: divisor)
        return r < 0 ? (q - 1, r + divisor) : (q, r)
    }
}

extension CrashReport {
    /// The image `frame` is in, when the report has it (a frame of another report, or one whose
    /// address no image holds, has none).
    public func image(of frame: Frame) -> Image? {
        guard let index = frame.imageIndex, images.indices.contains(index) else { return nil }
        return images[index]
    }
}
