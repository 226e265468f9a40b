import Atomics
import BlackboxFormat
import BlackboxSystem
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One running logging system: a journal, its writer thread, the sinks and the label levels.
///
/// `Blackbox.start` makes the process-wide one; tests make their own. A core is never deallocated
/// (handles point at it without retaining it, and a thread may still be inside a call when it is shut
/// down); after `shutdown` its calls write synchronously to stderr instead.
public final class LoggingCore: @unchecked Sendable {
    enum Mode: UInt8 {
        case running = 0
        /// Shut down, or inside a child process after `fork`: the journal and the writer belong to
        /// the parent, so lines go straight to stderr.
        case direct = 1
    }

    public let configuration: BlackboxConfiguration
    /// Finished archives and written reports, for the delivery (`DiagnosticsDelivery.run`).
    let announcements = DeliveryAnnouncements()
    let journal: Journal
    /// Which instance of the app on its directory this is (0 unless another process holds `journal`).
    package let instance: Int
    /// The log file's base name: the configuration's, with `.<instance>` after the first instance.
    package let logBaseName: String
    // `let`, not `var`: the hot path reads these, and a class's `var` costs a dynamic exclusivity check.
    let labels: LabelTable
    let writer: LogWriter
    private let maintainer: ArchiveMaintainer?
    let recent: RecentLines
    let dropped = DropCounter()
    /// The errors of records the writer describes (`RecordFlags.describesErrorLater`).
    let errorDescriptions: DeferredErrorDescriptions
    /// `UnsafeAtomic` (allocated once, never freed, like the core): read on every call, and a
    /// `ManagedAtomic` would cost a retain/release and an accessor each time.
    let mode = UnsafeAtomic<UInt8>.create(Mode.running.rawValue)
    private let writerSleeping: UnsafeAtomic<Bool>
    private let synchronousLevel: LogLevel
    private let overflow: OverflowPolicy
    let redactSensitiveValues: Bool
    let capturesLoggedErrors: Bool
    /// The process's error types (`KnownErrorTypes.shared`), held here so that a log call reaches
    /// them without a global's lazy initialisation check.
    let knownErrorTypes = KnownErrorTypes.shared
    /// Records keep their calling function (`RecordFlags.carriesFunction`): an output shows it.
    let recordsFunctions: Bool
    /// Copied out of `configuration`: read on every swift-log call, where going through the
    /// configuration struct retained and released all of its strings and closures.
    let metadataProvider: Logger.MetadataProvider?
    /// What start-up recovered from a previous process.
    public let recovery: RecoveryReport
    private let cachedReportContext = Mutex<ReportContext?>(nil)

    /// What this process's reports say about where they came from, read at the first report.
    var reportContext: ReportContext {
        cachedReportContext.withLock { cached in
            if let cached { return cached }
            let context = ReportContext(configuration)
            cached = context
            return context
        }
    }

    /// The writer thread's CPU time over its life, once `shutdown` has stopped it (the benchmark's
    /// writer cost per line).
    package var writerCPUNanoseconds: UInt64? { writer.cpuNanoseconds }

    public struct RecoveryReport: Sendable, Equatable {
        public var records: Int
        public var skippedBytes: UInt64
    }

    // MARK: Start

    public convenience init(configuration: BlackboxConfiguration) throws(BlackboxError) {
        try self.init(plan: Plan(configuration, environment: .current))
    }

    /// Opens what `plan` decided: the directories, the first free journal, the log file; replays what
    /// a dead process left; starts the writer and the archive maintainer.
    init(plan: Plan) throws(BlackboxError) {
        let configuration = plan.configuration
        if let environmentProblem = plan.environmentProblem {
            InternalDiagnostics.report(environmentProblem, key: "environment")
        }
        self.configuration = configuration
        self.synchronousLevel = configuration.synchronousLevel ?? .off
        self.overflow = configuration.overflow
        self.redactSensitiveValues = configuration.redactSensitiveValues
        self.capturesLoggedErrors = configuration.capturesLoggedErrors
        self.metadataProvider = configuration.metadataProvider
        self.recent = RecentLines(lineCapacity: configuration.recentLineCapacity)

        let logs = plan.layout.logs
        try makeDirectory(configuration.directory)
        try makeDirectory(logs)
        Self.ignoreFileSizeSignal()

        var (file, instance) = try Self.openFirstFreeJournal(plan)
        let journalPath = plan.journalPath(instance: instance)
        let baseName = plan.logBaseName(instance: instance)
        self.instance = instance
        self.logBaseName = baseName
        var journal = Journal(file: file)
        let checkpoint = file.reopened ? journal.loadCheckpoint() : nil
        let sink: LogFileSink?
        do {
            sink =
                plan.writesFile
                ? try LogFileSink(
                    directory: logs, baseName: baseName, checkpoint: checkpoint, now: configuration.clock())
                : nil
        } catch {
            file.close()  // release the lock: a corrected retry in this process must not find it held
            throw error
        }
        var settings = plan.writerSettings
        settings.outputs = settings.outputs.map { $0.available() }
        self.recordsFunctions = settings.outputs.contains { $0.showsFunction }

        // Replay what a dead process left, then, if the configured size changed, start a new journal.
        var recovered = Journal.RecoveryOutcome()
        if file.reopened {
            let replayer = LogWriter(
                journal: journal, settings: settings, file: sink, maintainer: nil, recent: recent, dropped: dropped)
            recovered = replayer.recover()
            journal.markAllConsumed()
            if file.capacity != configuration.journalSize || file.formatVersion != JournalFile.version {
                file.close()
                unlink(journalPath)
                file = try JournalFile.open(path: journalPath, capacity: configuration.journalSize)
                journal = Journal(file: file)
            }
        }
        self.journal = journal
        self.errorDescriptions = DeferredErrorDescriptions(journalCapacity: journal.capacity)
        self.recovery = RecoveryReport(records: recovered.records, skippedBytes: recovered.skippedBytes)

        let announcements = self.announcements
        self.maintainer = sink.map { sink in
            ArchiveMaintainer(
                directory: logs, baseName: baseName, policy: configuration.retention,
                clock: configuration.clock, onArchive: Self.archiveHook(configuration, announcements),
                activeFileSize: { [path = sink.activePath] in fileSize(path) })
        }
        self.writer = LogWriter(
            journal: journal, settings: settings, file: sink, maintainer: maintainer, recent: recent, dropped: dropped,
            errorDescriptions: errorDescriptions)
        self.writerSleeping = writer.sleeping
        self.labels = LabelTable(levels: configuration.levels)
        labels.attach(to: self)
        if let sink, file.reopened == false {
            // A fresh journal: checkpoint the file as it is, so a crash before the first batch
            // does not cut earlier content.
            journal.publish(
                Journal.Checkpoint(
                    readPosition: journal.releasedPosition, device: sink.device, inode: sink.inode, fileSize: sink.size,
                    fileStartNanoseconds: sink.startNanoseconds))
        }
        _ = Unmanaged.passRetained(self)  // immortal: see the type's documentation
        LoggingCore.registerForFork(self)
        maintainer?.start()
        writer.start()
        if let environmentProblem = plan.environmentProblem {
            appendText(
                level: .warning, label: handle(for: "blackbox"), message: environmentProblem,
                metadata: EncodedMetadata(), file: "", line: 0)
        }
    }

    /// The first journal no live process holds, and its instance number.
    private static func openFirstFreeJournal(_ plan: Plan) throws(BlackboxError) -> (JournalFile, instance: Int) {
        var instance = 0
        while true {
            do {
                let file = try JournalFile.open(
                    path: plan.journalPath(instance: instance), capacity: plan.configuration.journalSize)
                return (file, instance)
            } catch  where error.kind == .journalLocked && instance + 1 < plan.instanceLimit {
                instance += 1
            }
        }
    }

    /// The configuration's own hook first, then the announcement to the delivery.
    private static func archiveHook(_ configuration: BlackboxConfiguration, _ announcements: DeliveryAnnouncements)
        -> (@Sendable (String) -> Void)?
    {
        let hook = configuration.onArchive
        guard configuration.delivery != nil else { return hook }
        return { path in
            hook?(path)
            announcements.announce(.archiveFinished(path: path))
        }
    }

    private static func ignoreFileSizeSignal() {
        // Past RLIMIT_FSIZE the kernel sends SIGXFSZ, whose default action kills the process. Ignored,
        // the write fails with EFBIG and the logger degrades instead. Only a default action is changed.
        var current = sigaction()
        sigaction(SIGXFSZ, nil, &current)
        if current.__sigaction_handler.sa_handler == nil {
            signal(SIGXFSZ, SIG_IGN)
        }
    }

    // MARK: Levels

    func handle(for label: String) -> LabelHandle { labels.handle(for: label) }

    public var levels: LevelSettings {
        get { labels.levels }
        set { labels.levels = newValue }
    }

    // MARK: Producers

    /// Where a record being built goes: the journal, or (shut down, forked child) a scratch buffer
    /// that is formatted straight to stderr.
    struct Slot {
        let record: UnsafeMutableRawPointer
        let position: UInt64
        let direct: Bool
    }

    /// Reserves space for one record of `size` bytes. The hot path of every log call; nil when the
    /// line is dropped (journal full, counted).
    @inline(__always)
    func reserve(_ size: Int, level: LogLevel) -> Slot? {
        guard mode.load(ordering: .relaxed) == Mode.running.rawValue else {
            return Slot(
                record: .allocate(byteCount: RecordLayout.aligned(size), alignment: 8), position: 0, direct: true)
        }
        guard let (record, position) = journal.tryReserve(size) ?? reserveSlowly(size, level: level) else { return nil }
        return Slot(record: record, position: position, direct: false)
    }

    /// Seals a filled record and lets the writer know. `error`: a direct record's error to describe
    /// (`RecordFlags.describesErrorLater`; the writer takes a journal record's from `errorDescriptions`).
    @inline(__always)
    func commit(_ slot: Slot, size: Int, level: LogLevel, describing error: BorrowedError? = nil) {
        guard !slot.direct else { return writeDirect(slot.record, size: size, describing: error?.error) }
        journal.commit(slot.record, position: slot.position, length: size)
        if writerSleeping.load(ordering: .sequentiallyConsistent) { writer.wake() }
        if level >= synchronousLevel {
            _ = writer.waitUntilWritten(slot.position &+ 1, timeout: 30_000_000_000)
        }
    }

    /// How long a producer waiting for journal space sleeps before it looks at the writer's state again
    /// (whether it started failing: then the line is dropped, not waited for). Space given back wakes
    /// it at once (the writer wakes waiters after each batch), so the slice only bounds how late a
    /// failing writer that gives nothing back is noticed. Each slice's wakeup cost the sleeper ~17 µs
    /// of CPU on the VMs this was measured on: with 2 ms slices a 300 ms wait spent 2.5-4.1 ms of CPU
    /// (once 9 ms, on a loaded machine), with 20 ms slices 0.8-1.5 ms (`blockedCallerSleeps`).
    static let fullJournalWaitSlice: UInt64 = 20_000_000
    /// A writer about to give space back does so within a few turns: yielded, not slept.
    static let yieldsBeforeSleeping = 16
    /// A writer busy with a batch gives space back within a batch's time (~0.3 ms at W2's rate):
    /// polled, so that it need not wake anyone (waking sleepers after every batch cost W2's writer,
    /// the bottleneck there, ~3 % of its lines per second).
    static let pollingBeforeSleeping: UInt64 = 300_000

    @inline(never)
    private func reserveSlowly(_ size: Int, level: LogLevel) -> (UnsafeMutableRawPointer, UInt64)? {
        writer.wake()
        let timeout: UInt64
        if level >= synchronousLevel {
            timeout = 30_000_000_000
        } else if case .block(let milliseconds) = overflow, !writer.failing.load(ordering: .relaxed) {
            timeout = UInt64(max(0, milliseconds)) * 1_000_000
        } else {
            timeout = 0
        }
        if timeout > 0 {
            // A few yields, polling for a batch's time, then asleep until the writer gives space
            // back (it wakes waiters after each batch): a producer outrunning the writer for long
            // (errors described by reflection, issue 52) spent ~1 µs of its own CPU per line polling.
            // The sleep is cut into slices so that a writer that starts failing (drop, not block) is
            // noticed.
            let start = monotonicNanoseconds()
            let deadline = start + timeout
            let needed = UInt64(RecordLayout.aligned(size))
            var yields = 0
            repeat {
                if let slot = journal.tryReserve(size) { return slot }
                let now = monotonicNanoseconds()
                guard now < deadline else { break }
                if yields < Self.yieldsBeforeSleeping {
                    yields += 1
                    sched_yield()
                } else if now - start < Self.pollingBeforeSleeping {
                    usleep(50)
                } else {
                    let fits = journal.reservedEnd &+ needed &- journal.capacity
                    writer.waitUntilWritten(
                        fits, timeout: min(deadline - now, Self.fullJournalWaitSlice), wakingWriter: false)
                }
            } while !writer.failing.load(ordering: .relaxed)
        }
        if let slot = journal.tryReserve(size) { return slot }
        dropped.record(at: journal.reservedEnd)
        return nil
    }

    /// Formats a record on the calling thread and writes it to stderr (shut down, or forked child).
    @inline(never)
    private func writeDirect(_ scratch: UnsafeMutableRawPointer, size: Int, describing error: (any Error)?) {
        defer { scratch.deallocate() }
        scratch.storeBytes(of: UInt32(size), toByteOffset: RecordLayout.length, as: UInt32.self)
        let record = RecordView(base: UnsafeRawPointer(scratch))
        guard let error else { return Self.writeToStandardError(record) }
        var described = DescribedRecord()
        Self.writeToStandardError(described.copy(of: record, describing: error, limit: journal.maxRecordSize / 2))
    }

    private static func writeToStandardError(_ record: RecordView) {
        var formatter = LineFormatter(format: .text)
        var out = OutputBuffer(capacity: record.length + 128)
        formatter.append(record, to: &out)
        _ = writeFully(2, out.bytes.baseAddress, out.count)
    }

    // MARK: Flush and shutdown

    /// Blocks until everything logged before the call is written to the sinks, or `timeout` passed.
    @discardableResult
    public func flush(timeout: Duration = .seconds(5)) -> Bool {
        guard mode.load(ordering: .relaxed) == Mode.running.rawValue else { return true }
        return writer.waitUntilWritten(journal.reservedEnd, timeout: timeout.nanoseconds)
    }

    /// Returns when everything logged before the call is written to the sinks.
    public func flush() async {
        guard mode.load(ordering: .relaxed) == Mode.running.rawValue else { return }
        await writer.waitUntilWritten(journal.reservedEnd)
    }

    /// Drains the journal, stops the threads and releases the journal's lock. Idempotent.
    public func shutdown(timeout: Duration = .seconds(5)) {
        guard
            mode.compareExchange(
                expected: Mode.running.rawValue, desired: Mode.direct.rawValue, ordering: .sequentiallyConsistent
            ).exchanged
        else { return }
        // Reports still waiting for their frames' names go out now, named or not.
        ReportNaming.shared.finish(within: min(timeout, .seconds(3)))
        writer.stop(timeout: timeout.nanoseconds)
        maintainer?.stop()
        journal.file.close()
    }

    /// The last `count` lines written (the file's format when there is a file sink).
    public func recentLines(_ count: Int) -> [String] {
        flush(timeout: .seconds(1))
        return recent.last(count)
    }

    /// Test hook: stops (true) or resumes (false) the writer's draining, to fill the journal on purpose
    /// (and the benchmark's W5Q: a caller's cost without the writer working beside it).
    @_spi(Benchmarks)
    public func holdWriter(_ held: Bool) {
        writer.held.store(held, ordering: .relaxed)
        if !held { writer.wake() }
    }

    /// Test hook: waits until compression and aging work queued so far is done.
    func waitForArchiveMaintenance() { maintainer?.waitUntilIdle() }
    func runAgingNow() {
        maintainer?.requestAging()
        maintainer?.waitUntilIdle()
    }

    // MARK: fork

    private static let forkRegistry = ForkRegistry()

    /// The core non-fatal assertion reports go through when `Blackbox.start` was not used: the one
    /// an app or tool built itself. Nil when none or several are running (which directory would be
    /// the app's is then anybody's guess).
    static var onlyRunning: LoggingCore? {
        var running: [LoggingCore] = []
        forkRegistry.visit { core in
            if core.mode.load(ordering: .relaxed) == Mode.running.rawValue { running.append(core) }
        }
        return running.count == 1 ? running[0] : nil
    }

    private static func registerForFork(_ core: LoggingCore) {
        forkRegistry.add(core)
    }

    /// In a forked child, every core switches to direct mode: the child must neither write into the
    /// parent's journal nor wait for a writer thread it does not have.
    fileprivate static func enterForkedChild() {
        forkRegistry.visit { $0.mode.store(Mode.direct.rawValue, ordering: .relaxed) }
    }
}

/// The cores of this process, for the `pthread_atfork` child handler. A fixed array with an atomic
/// count: the child handler must not take locks another thread may have held at fork time.
private final class ForkRegistry: @unchecked Sendable {
    private let capacity = 256
    private let slots: UnsafeMutablePointer<Unmanaged<LoggingCore>?>
    private let count = ManagedAtomic<Int>(0)
    private let installed = ManagedAtomic<Bool>(false)

    init() {
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: nil, count: capacity)
    }

    func add(_ core: LoggingCore) {
        if installed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            pthread_atfork(nil, nil) { LoggingCore.enterForkedChild() }
        }
        let index = count.loadThenWrappingIncrement(ordering: .acquiringAndReleasing)
        guard index < capacity else { return }
        slots[index] = Unmanaged.passUnretained(core)
    }

    func visit(_ body: (LoggingCore) -> Void) {
        for i in 0..<min(count.load(ordering: .acquiring), capacity) {
            if let core = slots[i] { body(core.takeUnretainedValue()) }
        }
    }
}
