import BlackboxFormat
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Everything `Blackbox.start` needs. Every limit has a default (documented here and in docs/logging.md)
/// and can be changed.
public struct BlackboxConfiguration: Sendable {
    /// The app's name: the default directory and file names derive from it.
    public var appName: String
    /// Recorded in crash reports and bundles. Default: none.
    public var appVersion: String?
    public var appBuild: String?
    /// The diagnostics directory (see docs/layout.md). Default: `$XDG_STATE_HOME/<appName>`, or
    /// `~/.local/state/<appName>`.
    public var directory: String
    /// Log files are `<baseFileName>.log` and its archives. Default: the app name.
    public var baseFileName: String

    /// The default level and per-label rules. `BLACKBOX_LOG_LEVEL` in the environment is applied on top.
    public var levels: LevelSettings
    public var sinks: Sinks
    /// The log file's format. Default `.text` (what `blackbox logs`, bundles and the collector read
    /// best); the console's is `console.format`.
    public var format: LogFormat
    public var console: ConsoleOptions
    /// The systemd journal output (`Sinks.journald`): its identifier, socket and send timeout.
    public var journald: JournaldOptions

    /// How many processes of the app may run at once on one directory (workers, a systemd
    /// template): each takes the first free journal (`journal`, `journal.1`…) and writes its own log
    /// file (`<base>.log`, `<base>.1.log`…). Default 16; 1 refuses a second process
    /// (`BlackboxError.journalLocked`).
    public var maxInstances: Int
    /// Size of the crash-proof journal ring, a power of two. Default 4 MiB.
    public var journalSize: Int
    public var overflow: OverflowPolicy
    /// Calls at or above this level are never dropped and return only once their line has been written
    /// to the sinks (every call is already crash-safe in the journal when it returns). Default: none.
    public var synchronousLevel: LogLevel?

    public var rotation: RotationPolicy
    public var retention: RetentionPolicy
    /// Metadata values marked `Sensitivity.sensitive` are written as `<redacted>` unless this is false.
    public var redactSensitiveValues: Bool
    /// A swift-log call at `.error` or above with an `error:` also captures the error
    /// (`Blackbox.capture`: an error report with its stack, rate-limited per call site) unless this is
    /// false. Default true.
    public var capturesLoggedErrors: Bool
    /// How many recent lines `Blackbox.recentLines` can return. Default 256.
    public var recentLineCapacity: Int
    /// Metadata added to every swift-log call (e.g. a trace id from a task local). Default: none.
    public var metadataProvider: Logger.MetadataProvider?
    /// Called on a background thread with the path of each finished archive (after compression).
    public var onArchive: (@Sendable (String) -> Void)?
    public var crashReporting: CrashReportingOptions
    /// Takes reports and log archives off the machine (e.g. `BlackboxUpload.CollectorUpload`).
    /// Default: none, everything stays in the diagnostics directory.
    public var delivery: (any DiagnosticsDelivery)?
    /// The wall clock, replaceable in tests. Nanoseconds since the Unix epoch.
    public var clock: @Sendable () -> UInt64

    public init(appName: String, directory: String? = nil) {
        self.appName = appName
        self.appVersion = nil
        self.appBuild = nil
        self.crashReporting = CrashReportingOptions()
        self.directory = directory ?? Self.defaultDirectory(appName: appName)
        self.baseFileName = appName
        self.levels = LevelSettings()
        self.sinks = Sinks.defaults(
            console: getenv("BLACKBOX_CONSOLE").map { String(cString: $0) }, standardErrorIsTerminal: isatty(2) == 1,
            standardStreamIsJournal: JournalStream.connectsStandardStreams(
                getenv("JOURNAL_STREAM").map { String(cString: $0) }))
        self.format = .text
        self.console = ConsoleOptions()
        self.journald = JournaldOptions()
        self.maxInstances = BlackboxInstances.limit
        self.journalSize = 4 << 20
        self.overflow = .block(timeoutMilliseconds: 100)
        self.synchronousLevel = nil
        self.rotation = RotationPolicy()
        self.retention = RetentionPolicy()
        self.redactSensitiveValues = true
        self.capturesLoggedErrors = true
        self.recentLineCapacity = 256
        self.metadataProvider = nil
        self.onArchive = nil
        self.delivery = nil
        self.clock = wallClockNanoseconds
    }

    /// `$XDG_STATE_HOME/<app>`, else `<home>/.local/state/<app>` with the home directory from `HOME`
    /// or, when it is unset, the password database. A process with no home at all gets
    /// `/var/tmp/blackbox-<uid>/<app>`, which start-up refuses if another user created it first.
    public static func defaultDirectory(appName: String) -> String {
        if let state = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), state.hasPrefix("/") {
            return "\(state)/\(appName)"
        }
        guard let home = homeDirectory() else { return "/var/tmp/blackbox-\(geteuid())/\(appName)" }
        return "\(home)/.local/state/\(appName)"
    }
}

public struct Sinks: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// stderr; colored when stderr is a terminal.
    public static let console = Sinks(rawValue: 1)
    /// `<directory>/logs/<baseFileName>.log`, rotated and aged.
    public static let file = Sinks(rawValue: 2)
    /// One JSON object per line on stdout (the `jsonLines` format), for the log collectors of
    /// container platforms, which read a container's stdout.
    public static let standardOutput = Sinks(rawValue: 4)
    /// The systemd journal, through its native protocol: one entry per record with its priority,
    /// call site, thread and metadata as fields (`journalctl -o verbose` shows them; `journalctl
    /// REQUEST_ID=…` finds them). See `JournaldOptions`; with no journal running, text on stderr.
    public static let journald = Sinks(rawValue: 8)

    /// The default in every build: the log file (what `blackbox logs`, bundles and crash reports read)
    /// and one stream: the systemd journal's native protocol when systemd connected stdout or stderr to
    /// the journal (`JOURNAL_STREAM`, as systemd's documentation asks programs to check), else colored
    /// text on stderr when stderr is a terminal, else JSON Lines on stdout (`kubectl logs` and container
    /// log drivers read it). `BLACKBOX_CONSOLE` chooses the stream instead: `text` (stderr), `json`
    /// (stdout), `journald` or `off`; another value is ignored.
    public static func defaults(console: String?, standardErrorIsTerminal: Bool, standardStreamIsJournal: Bool = false)
        -> Sinks
    {
        switch console {
        case "text": [.file, .console]
        case "json": [.file, .standardOutput]
        case "journald": [.file, .journald]
        case "off": [.file]
        default:
            if standardStreamIsJournal {
                [.file, .journald]
            } else if standardErrorIsTerminal {
                [.file, .console]
            } else {
                [.file, .standardOutput]
            }
        }
    }

    /// The outputs by name, for the run record and `blackbox doctor`.
    var names: [String] {
        [
            (Sinks.file, "file"), (.console, "stderr (text)"), (.standardOutput, "stdout (JSON Lines)"),
            (.journald, "journald"),
        ]
        .filter { contains($0.0) }.map(\.1)
    }
}

/// The systemd journal output (`Sinks.journald`).
public struct JournaldOptions: Sendable, Equatable {
    /// `SYSLOG_IDENTIFIER` of every entry (`journalctl -t NAME`). Default: nil, the app's name.
    public var identifier: String?
    /// journald's native socket. Default `/run/systemd/journal/socket`.
    public var socketPath: String = JournaldSocket.defaultPath
    /// How long the writer may wait for the journal in one batch (one send at most this long again):
    /// past it, entries the journal's queue has no room for are not sent (said once on stderr), so a
    /// journal slower than the app's logging never holds up the log file. Default 2 ms: journald took
    /// ~35 k entries/s on a 2-core machine (`make bench-journald`), and an app logging less than that
    /// loses nothing.
    public var maxWaitPerBatch: Duration = .milliseconds(2)
    public init() {}
}

/// systemd's `JOURNAL_STREAM` (`<device>:<inode>` of the stream it connected to the journal).
enum JournalStream {
    /// True when stdout or stderr is the stream `variable` names: a service of systemd's whose output
    /// goes to the journal (a shell inherits the variable but not the stream, so both are compared).
    static func connectsStandardStreams(_ variable: String?) -> Bool {
        guard let variable else { return false }
        let parts = variable.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        return [Int32(1), 2].contains { descriptor in
            var status = stat()
            return fstat(descriptor, &status) == 0 && UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
        }
    }
}

public enum LogFormat: Sendable, Equatable {
    /// `2026-11-21T22:39:39.123Z INFO  net: message key=value (Module/File.swift:12)`
    case text
    /// One JSON object per line: ts, level, label, msg, the trace context with OpenTelemetry's names
    /// for non-OTLP formats (`trace_id`, `span_id`, `trace_flags`, when the metadata has them), the
    /// rest of the metadata as meta, file, line, tid.
    case jsonLines
    /// One JSON object per line in the Elastic Common Schema's logging form (`@timestamp`,
    /// `log.level`, `message`, `ecs.version`, `log.logger`, `trace.id`, `span.id`, `error.message`,
    /// `log.origin.file.*`, `process.thread.id`, the rest of the metadata as `labels`).
    case ecs
    /// logfmt: `time=… level=info logger=net msg="…" key=value source=File.swift:12 tid=7`.
    case logfmt

    /// The names `BLACKBOX_CONSOLE_FORMAT` takes: `text`, `json`, `ecs`, `logfmt`.
    init?(name: String) {
        switch name.lowercased() {
        case "text": self = .text
        case "json", "jsonl", "json-lines": self = .jsonLines
        case "ecs": self = .ecs
        case "logfmt": self = .logfmt
        default: return nil
        }
    }
}

public struct ConsoleOptions: Sendable {
    public enum Color: Sendable { case auto, always, never }
    public var color: Color = .auto
    /// The console stream's format, stderr's and stdout's alike. Default nil: text on stderr, JSON Lines
    /// on stdout. `BLACKBOX_CONSOLE_FORMAT=text|json|ecs|logfmt` sets it at start.
    public var format: LogFormat? = nil
    public init() {}
}

/// What a call does when the journal is full (the writer cannot keep up or the disk is stuck).
public enum OverflowPolicy: Sendable, Equatable {
    /// Wait for space, at most this long, then drop. Never waits while the writer is failing to write.
    case block(timeoutMilliseconds: Int)
    /// Drop at once. Either way, drops are counted and one "N lines dropped" line is written when
    /// space returns.
    case drop
}

public struct RotationPolicy: Sendable {
    /// Rotate when the active file would grow past this. Default 16 MiB.
    public var maxFileSize: UInt64 = 16 << 20
    /// Rotate a non-empty file this long after it was started. Default 24 h; nil: never by time.
    public var interval: Duration? = .seconds(24 * 3600)
    public init() {}
}

public struct RetentionPolicy: Sendable {
    /// Keep at most this many archives. Default 20.
    public var maxArchives: Int? = 20
    /// Keep archives plus the active file under this many bytes (oldest archives go first). Default 256 MiB.
    public var maxTotalBytes: UInt64? = 256 << 20
    /// Delete archives whose last line is older than this. Default 14 days.
    public var maxAge: Duration? = .seconds(14 * 24 * 3600)
    /// gzip archives on a background thread. Default true.
    public var compressArchives = true
    /// zlib's level for archives, from 1 (least CPU) to 9 (smallest files); out of range is clamped.
    /// Default 3: compression runs inside the app, beside its requests. On mixed server logs
    /// (2026-11-26, bench/README.md) level 3 gives 15.3 % of the size for 4.9 ms of CPU per MB, gzip's
    /// own level 6 13.2 % for 12.1 ms, level 9 little less for more; choose 6 or 9 when disk or
    /// upload matters more than CPU.
    public var compressionLevel = 3
    /// How often aging runs besides start-up and each rotation. Default 10 minutes.
    public var checkInterval: Duration = .seconds(600)
    public init() {}
}
