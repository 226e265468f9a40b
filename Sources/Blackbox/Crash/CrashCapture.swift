import BlackboxFormat
import BlackboxSystem
import CCrashHandler

#if canImport(Glibc)
    import Glibc
#endif

/// Installs the C signal handler (Sources/CCrashHandler) with everything prepared in ordinary code:
/// the pending directory, the header lines (app, host, process start), and the journal to copy the
/// last log records from.
public enum CrashCapture {
    public struct InstallError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { "crash capture cannot be installed: \(reason)" }
    }

    /// Installs (or re-targets) crash capture for a diagnostics directory. Idempotent.
    public static func install(
        directory: String, appName: String, appVersion: String? = nil, appBuild: String? = nil,
        options: CrashReportingOptions = CrashReportingOptions()
    ) throws(InstallError) {
        try install(
            directory: directory, appName: appName, appVersion: appVersion, appBuild: appBuild, options: options,
            journal: nil)
    }

    static func install(
        directory: String, appName: String, appVersion: String?, appBuild: String?, options: CrashReportingOptions,
        journal: JournalFile?
    ) throws(InstallError) {
        let pending = DiagnosticsDirectory(directory).pendingCrashes
        do {
            try makeDirectory(pending)
        } catch {
            throw InstallError(reason: error.description)
        }
        let header = headerLines(
            appName: appName, appVersion: appVersion, appBuild: appBuild, metadata: options.metadata)
        let status = pending.withCString { pendingPointer in
            header.withCString { headerPointer in
                var raw = bbx_crash_options()
                raw.pending_directory = pendingPointer
                raw.header_lines = headerPointer
                if let journal {
                    func headerWord(_ offset: Int) -> UnsafePointer<UInt64> {
                        UnsafeRawPointer(journal.header + offset).assumingMemoryBound(to: UInt64.self)
                    }
                    raw.journal_data = UnsafeRawPointer(journal.data)
                    raw.journal_capacity = UInt64(journal.capacity)
                    raw.journal_write_position = headerWord(JournalFile.Offset.writePosition)
                    raw.journal_tail_bytes = UInt32(clamping: max(0, options.journalTailBytes))
                    raw.journal_read_position = headerWord(JournalFile.Offset.readPosition)
                    raw.journal_writer_thread = headerWord(JournalFile.Offset.writerThread)
                }
                let backtracer = SwiftBacktracerPolicy.effective(
                    configured: options.swiftBacktracer,
                    environment: getenv("BLACKBOX_SWIFT_BACKTRACER").map { String(cString: $0) })
                raw.chain_swift_backtracer = backtracer == .always ? 1 : 0
                return bbx_crash_install(&raw)
            }
        }
        guard status == 0 else { throw InstallError(reason: errnoDescription(status)) }
        bbx_crash_cover_new_threads(options.coverNewThreads ? 1 : 0)
        if let interval = options.alternateStackSweep {
            let started = bbx_altstacks_start(UInt32(clamping: max(10, interval.nanoseconds / 1_000_000)))
            if started != 0 {
                InternalDiagnostics.report(
                    "threads Blackbox did not create get no alternate signal stack: \(errnoDescription(started))")
            }
        }
        if let problem = configureDelivery(options.deliveryAtCrash, reportDirectory: pending) {
            InternalDiagnostics.report("crash-time delivery is off: \(problem)")
        }
    }

    /// Hands the handler the helper's command line and environment (nil: off); the problem, if the
    /// configuration cannot work.
    static func configureDelivery(_ delivery: CrashTimeDelivery?, reportDirectory: String) -> String? {
        guard let delivery else {
            _ = bbx_crash_set_delivery(nil)
            return nil
        }
        guard delivery.executable.hasPrefix("/"), access(delivery.executable, X_OK) == 0 else {
            _ = bbx_crash_set_delivery(nil)
            return "\(delivery.executable) is not an executable file (give an absolute path)"
        }
        let deadline = min(max(delivery.deadline, .seconds(1)), .seconds(120))
        let milliseconds = deadline.components.seconds * 1000 + deadline.components.attoseconds / 1_000_000_000_000_000
        // The helper stops trying half a second before the handler would kill it.
        let helperSeconds = max(0.5, Double(milliseconds) / 1000 - 0.5)
        var arguments = ["deliver-crash", "--deadline", String(helperSeconds)]
        var environment = ["BLACKBOX_SERVER": delivery.server, "BLACKBOX_KEY": delivery.key]
        var passed = ["PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"]
        if let dsn = delivery.sentryDSN {
            arguments.append("--sentry")
            environment = ["SENTRY_DSN": dsn]
            passed += ["SENTRY_RELEASE", "SENTRY_ENVIRONMENT"]
        }
        for name in passed {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        environment.merge(delivery.environment) { _, configured in configured }
        let variables = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        guard variables.count <= Int(BBX_DELIVERY_MAX_ENVIRONMENT) else {
            return "more than \(BBX_DELIVERY_MAX_ENVIRONMENT) environment variables"
        }
        let status = withCStrings(arguments) { argumentPointers in
            withCStrings(variables) { variablePointers in
                delivery.executable.withCString { executable in
                    reportDirectory.withCString { directory in
                        var raw = bbx_crash_delivery()
                        raw.executable = executable
                        raw.arguments = argumentPointers
                        raw.argument_count = Int32(arguments.count)
                        raw.environment = variablePointers
                        raw.environment_count = Int32(variables.count)
                        raw.report_directory = directory
                        raw.deadline_ms = UInt32(milliseconds)
                        return bbx_crash_set_delivery(&raw)
                    }
                }
            }
        }
        return status == 0 ? nil : errnoDescription(status)
    }

    /// C string pointers to `strings`, valid inside `body` (the C side copies them).
    private static func withCStrings(
        _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Int32
    ) -> Int32 {
        let copies = strings.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return EINVAL }
            return body(base)
        }
    }

    /// Gives the calling thread an alternate signal stack, so that a stack overflow on it is reported.
    /// Signal stacks are per thread: every thread started after `Blackbox.start` installs one as it
    /// starts (`CrashReportingOptions.coverNewThreads`), and the sweep
    /// (`CrashReportingOptions.alternateStackSweep`) reaches older ones within a second; call this at
    /// the top of a thread when both are off. Freed when the thread exits.
    @discardableResult
    public static func prepareCurrentThread(alternateStackSize: Int = 64 << 10) -> Bool {
        bbx_crash_ensure_alternate_stack(UInt64(max(alternateStackSize, 64 << 10))) == 0
    }

    /// Offers an alternate signal stack to every thread that has none, now, instead of at the next
    /// sweep (`CrashReportingOptions.alternateStackSweep`); returns how many were offered one. The
    /// threads install it when they next run.
    @discardableResult
    public static func prepareAllThreads() -> Int { Int(bbx_altstacks_sweep()) }

    /// How the process's threads came by their alternate signal stacks.
    public struct AlternateStackCoverage: Sendable, Equatable {
        /// Threads that installed theirs as they started (`coverNewThreads`); counted for the
        /// process's life, exited ones included.
        public var coveredAtStart: Int
        /// Living threads the sweep gave one by a signal (started before `Blackbox.start`, or with
        /// `coverNewThreads` off).
        public var givenBySweep: Int
        /// Living threads the sweep leaves alone: those covered at start, Blackbox's own, prepared ones.
        public var withTheirOwn: Int
        /// Living threads the sweep cannot reach (they block every signal it may send).
        public var unreachable: Int
    }

    public static var alternateStackCoverage: AlternateStackCoverage {
        var statistics = bbx_altstack_statistics()
        bbx_altstacks_statistics(&statistics)
        return AlternateStackCoverage(
            coveredAtStart: Int(bbx_crash_covered_thread_count()), givenBySweep: Int(statistics.prepared_threads),
            withTheirOwn: Int(statistics.threads_with_their_own), unreachable: Int(statistics.unreachable_threads))
    }

    /// Re-reads the list of loaded images; call after loading plugins with dlopen.
    public static func refreshImages() { bbx_crash_refresh_images() }

    public static var isInstalled: Bool { bbx_crash_is_installed() != 0 }

    static func headerLines(appName: String, appVersion: String?, appBuild: String?, metadata: [String: String])
        -> String
    {
        let host = currentHost()
        var lines: [(String, String?)] = [
            ("app", appName), ("app-version", appVersion), ("app-build", appBuild),
            ("host", host.name), ("os", host.os), ("kernel", host.kernel), ("arch", host.architecture),
            ("exe", executablePath()), ("start-time", processStartTime().map { String($0) }),
        ]
        lines += metadata.sorted { $0.key < $1.key }.map { ("metadata", "\($0.key) \($0.value)") }
        return lines.compactMap { key, value in
            guard let value else { return nil }
            // One line per field, whatever the value holds.
            let clean = value.map { $0 == "\n" || $0 == "\r" ? " " : $0 }
            return "\(key) \(String(clean))\n"
        }.joined()
    }

    /// This machine, as reports describe it.
    static func currentHost() -> CrashReport.Host {
        var system = utsname()
        uname(&system)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return CrashReport.Host(
            name: field(system.nodename), os: operatingSystemName(),
            kernel: "\(field(system.sysname)) \(field(system.release))", architecture: field(system.machine))
    }

    static func operatingSystemName() -> String {
        guard let bytes = DurableFile.read("/etc/os-release", limit: 64 << 10) else { return "Linux" }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
            return line.dropFirst("PRETTY_NAME=".count).trimmingQuotes()
        }
        return "Linux"
    }

    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func processStartTime() -> Double? { ProcessFacts.startTime(of: getpid()) }
}

extension Substring {
    fileprivate func trimmingQuotes() -> String {
        var text = self
        if text.hasPrefix("\"") { text = text.dropFirst() }
        if text.hasSuffix("\"") { text = text.dropLast() }
        return String(text)
    }
}

extension Blackbox {
    /// Test support only: makes the crash handler fault while writing (1: inside a protected section,
    /// 2: outside), to exercise its nested-crash path.
    package static func setCrashHandlerTestFault(_ mode: Int32) { bbx_crash_set_test_fault(mode) }
}
