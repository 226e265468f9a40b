import Atomics
import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The one thread that drains the journal into the sinks.
///
/// Each batch: format committed records (up to `batchBytes`) into one buffer per output
/// (`LogOutput`: the file, the console, stdout, a socket), send each buffer out (the file's and a
/// stream's with one `write(2)`), publish the journal checkpoint, then release the space. Rotation
/// happens between lines, never inside one.
///
/// Sleeping without lost wake-ups (a Dekker handshake, both sides sequentially consistent):
/// the writer sets `sleeping`, then re-reads the journal's reservation end, and waits only if nothing
/// was reserved; a producer reserves (a CAS), then reads `sleeping`, and wakes the writer if set.
/// Either the writer sees the reservation or the producer sees the flag. An idle process therefore
/// costs no CPU, and a busy one pays no syscall per line.
final class LogWriter: @unchecked Sendable {
    struct Settings {
        /// Every output, the file's among them when there is a file (its `LogFileSink` is the writer's).
        var outputs: [LogOutput.Spec]
        var rotation: RotationPolicy
        var clock: @Sendable () -> UInt64
    }

    static let batchBytes = 256 << 10

    private let journal: Journal
    private let settings: Settings
    private let file: LogFileSink?
    private let maintainer: ArchiveMaintainer?
    private let recent: RecentLines
    private let dropped: DropCounter
    /// Where the errors of records marked `describesErrorLater` wait; nil while replaying a dead
    /// process's journal, whose records keep their errors' type names.
    private let errorDescriptions: DeferredErrorDescriptions?
    @exclusivity(unchecked) private var describedRecord = DescribedRecord()
    /// When the writer sweeps the described errors no caller has released
    /// (`DeferredErrorDescriptions.releaseDescribed`): `sweepInterval` after the first one it left
    /// since its last sweep; nil when it left none.
    @exclusivity(unchecked) private var describedErrorsSweepDue: UInt64?

    // Writer-thread state. Only the writer thread touches it (recovery runs before the thread starts),
    // so the per-access dynamic exclusivity checks a class's `var` would get are switched off.
    @exclusivity(unchecked) private var cursor: UInt64
    /// The file's output, when there is a file.
    private let fileOutput: LogOutput?
    /// The outputs that are not the file (streams, sockets): written as they are, best effort.
    private let streamOutputs: [LogOutput]
    @exclusivity(unchecked) private var linesInBatch = 0
    private let rotation: RotationRule
    /// Lines dropped for a full journal whose notice is in the current batch: if the batch cannot be
    /// written, they are counted as lost with it, so every line is either written or counted.
    private var droppedNoticedInBatch: UInt64 = 0
    /// Where the records of the batch being formatted end (the journal's reserved end at its start).
    private var batchEnd: UInt64 = 0
    /// Errors written with their type only since the last notice (`describingError`).
    private var undescribedErrors = 0
    private var undescribedErrorsReportDue: UInt64 = 0
    private var failure = FailureEpisode()
    private let notice = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)

    // Shared with producers and flushers.
    /// Allocated once and never freed (writers live as long as their immortal core).
    let sleeping = UnsafeAtomic<Bool>.create(false)
    /// True while the file cannot be written: producers then drop instead of blocking.
    let failing = ManagedAtomic<Bool>(false)
    /// Every record before this position has been handed to the sinks.
    let writtenPosition: ManagedAtomic<UInt64>
    private let waiters = ManagedAtomic<Int>(0)
    /// Test hook: while set, the writer drains nothing, as if the disk were stuck.
    let held = ManagedAtomic<Bool>(false)
    private let lock = ConditionLock()
    private var wakeRequested = false  // guarded by lock
    private var stopRequested = false  // guarded by lock
    private var stopped = false  // guarded by lock
    private var cpuNanosecondsWhenStopped: UInt64?  // guarded by lock

    /// The writer thread's CPU time over its life, once it has stopped (for the benchmark's "writer
    /// CPU per line").
    var cpuNanoseconds: UInt64? { lock.withLock { cpuNanosecondsWhenStopped } }
    // guarded by lock
    private var asyncWaiters: [(target: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

    init(
        journal: Journal, settings: Settings, file: LogFileSink?, maintainer: ArchiveMaintainer?, recent: RecentLines,
        dropped: DropCounter, errorDescriptions: DeferredErrorDescriptions? = nil
    ) {
        self.journal = journal
        self.settings = settings
        self.file = file
        self.maintainer = maintainer
        self.recent = recent
        self.dropped = dropped
        self.errorDescriptions = errorDescriptions
        let fileSpec = settings.outputs.first { $0.destination == .file }
        assert((fileSpec != nil) == (file != nil), "a file output and the file's sink come together")
        self.fileOutput = file == nil ? nil : fileSpec.map { LogOutput($0) }
        self.streamOutputs = settings.outputs.filter { $0.destination != .file }.map {
            LogOutput($0, capacity: 64 << 10)
        }
        self.rotation = RotationRule(settings.rotation)
        self.cursor = journal.loadCheckpoint().readPosition
        self.writtenPosition = ManagedAtomic(cursor)
    }

    deinit { notice.deallocate() }

    // MARK: Recovery (before the thread starts)

    /// Replays what a dead process left in the journal into the file (the console when there is no
    /// file sink), exactly once: the file was already cut back to the checkpoint.
    func recover() -> Journal.RecoveryOutcome {
        let trusted = journal.loadCheckpoint().isTrusted
        let outcome = journal.recover { record, next in
            format(record, next: next, streams: file == nil)
            if isBatchFull { writeBatch(upTo: next) }
        }
        cursor = journal.file.writePosition.load(ordering: .acquiring)
        if outcome.records > 0 || outcome.skippedBytes > 0 {
            var text = "recovered \(outcome.records) log records left by a previous process"
            if outcome.skippedBytes > 0 {
                text += "; skipped \(outcome.skippedBytes) bytes in \(outcome.skippedRegions) torn or corrupted places"
            }
            appendNotice(.warning, text, streams: file == nil)
        }
        if !trusted {
            appendNotice(
                .warning,
                "the journal's checkpoint was damaged: the log file was kept whole and records were replayed from the last released position, so a few lines may appear twice",
                streams: file == nil)
        }
        writeBatch(upTo: cursor)
        return outcome
    }

    // MARK: Thread

    func start() {
        startThread(name: "blackbox-writer") { [self] in run() }
    }

    /// After a batch that did not fill up, the writer waits this long for more lines before the next
    /// one (unless someone is waiting for a flush). Fewer, bigger batches: fewer syscalls, and the
    /// producers' cache lines are not pulled away on every call. Each wakeup costs the writer a timed
    /// futex wait and a switch: pausing 200 µs, a server logging 20 k lines/s woke it every 4-5 lines
    /// and its writer spent 4.0 µs per line; pausing 1 ms, 1.8 µs (`make bench-server`). Lines reach
    /// the file up to 1 ms later: the journal keeps them through a crash meanwhile, and a producer
    /// that finds the journal full wakes the writer at once.
    static let batchPause: UInt64 = 1_000_000
    /// Quiet pauses (~1 ms in all) before the writer really sleeps and producers must wake it.
    static let pausesBeforeSleep = 1

    private func run() {
        // For the crash handler, which waits for this thread to write the lines logged before a crash.
        journal.file.writerThread.store(UInt64(currentThreadID()), ordering: .releasing)
        defer { journal.file.writerThread.store(0, ordering: .releasing) }
        // Lines arrived within this many pauses: keep pausing (producers need not wake us) rather than
        // sleeping, which would make the next producer pay a futex wake.
        var quietPauses = 0
        while true {
            if held.load(ordering: .relaxed) {
                if lock.withLock({ stopRequested }) { held.store(false, ordering: .relaxed) }
                usleep(1000)
                continue
            }
            let before = cursor
            if drain() {
                quietPauses = 0
                releaseDescribedErrorsIfDue()
                let drained = cursor &- before
                if drained < UInt64(Self.batchBytes / 2) { pause() }
                continue
            }
            if journal.reservedEnd != cursor {
                // A producer reserved but has not committed yet: it is a few stores away.
                sched_yield()
                continue
            }
            if lock.withLock({ stopRequested }) { break }
            runTimers()
            if quietPauses < Self.pausesBeforeSleep {
                quietPauses += 1
                pause()
            } else {
                sleep()
            }
        }
        writeBatch(upTo: cursor)
        errorDescriptions?.releaseDescribed()
        let cpu = currentThreadCPUNanoseconds()
        lock.withLock {
            stopped = true
            cpuNanosecondsWhenStopped = cpu
            lock.broadcast()
            resumeAsyncWaiters(all: true)
        }
    }

    private func sleep() {
        let deadline = monotonicNanoseconds() + nextTimerDelay()
        lock.withLock {
            sleeping.store(true, ordering: .sequentiallyConsistent)
            if journal.reservedEnd == cursor && !wakeRequested && !stopRequested {
                lock.wait(untilMonotonic: deadline)
            }
            sleeping.store(false, ordering: .relaxed)
            wakeRequested = false
        }
    }

    private func pause() {
        guard waiters.load(ordering: .relaxed) == 0 else { return }
        let deadline = monotonicNanoseconds() + Self.batchPause
        lock.withLock {
            if !wakeRequested && !stopRequested { lock.wait(untilMonotonic: deadline) }
            wakeRequested = false
        }
    }

    /// Called by producers that saw `sleeping`, and by flushers.
    func wake() {
        lock.withLock {
            wakeRequested = true
            lock.broadcast()
        }
    }

    /// Drains what is left and stops the thread; returns false if it did not stop in time.
    @discardableResult
    func stop(timeout: UInt64) -> Bool {
        let deadline = monotonicNanoseconds() + timeout
        return lock.withLock {
            stopRequested = true
            lock.broadcast()
            while !stopped {
                if !lock.wait(untilMonotonic: deadline) && monotonicNanoseconds() >= deadline { return false }
            }
            return true
        }
    }

    // MARK: Flush

    /// Blocks until every record before `target` has reached the sinks (and its space is given back),
    /// or the timeout passed. `wakingWriter` false: for a producer that found the journal full, which
    /// woke the writer already (a full journal keeps it busy); waking it here broadcast to the other
    /// waiters too, and four producers waking one another on every wait cost W2 a quarter of its
    /// lines per second.
    @discardableResult
    func waitUntilWritten(_ target: UInt64, timeout: UInt64, wakingWriter: Bool = true) -> Bool {
        if writtenPosition.load(ordering: .acquiring) >= target { return true }
        let deadline = monotonicNanoseconds() + timeout
        waiters.wrappingIncrement(ordering: .sequentiallyConsistent)
        defer { waiters.wrappingDecrement(ordering: .relaxed) }
        return lock.withLock {
            if wakingWriter {
                wakeRequested = true
                lock.broadcast()
            }
            while writtenPosition.load(ordering: .acquiring) < target {
                if stopped { return false }
                if !lock.wait(untilMonotonic: deadline) && monotonicNanoseconds() >= deadline {
                    return writtenPosition.load(ordering: .acquiring) >= target
                }
            }
            return true
        }
    }

    func waitUntilWritten(_ target: UInt64) async {
        if writtenPosition.load(ordering: .acquiring) >= target { return }
        await withCheckedContinuation { continuation in
            lock.withLock {
                if writtenPosition.load(ordering: .acquiring) >= target || stopped {
                    continuation.resume()
                    return
                }
                waiters.wrappingIncrement(ordering: .sequentiallyConsistent)
                asyncWaiters.append((target, continuation))
                wakeRequested = true
                lock.broadcast()
            }
        }
    }

    /// Call with the lock held.
    private func resumeAsyncWaiters(all: Bool = false) {
        let written = writtenPosition.load(ordering: .acquiring)
        asyncWaiters.removeAll { waiter in
            guard all || waiter.target <= written else { return false }
            waiter.continuation.resume()
            waiters.wrappingDecrement(ordering: .relaxed)
            return true
        }
    }

    // MARK: Batches

    /// Formats and writes one batch; false when no committed record was waiting.
    private func drain() -> Bool {
        let end = journal.reservedEnd
        batchEnd = end
        var position = cursor
        rotateByTimeIfDue()
        var gap = dropped.pendingGap
        while position < end && !isBatchFull {
            guard let record = journal.committedRecord(at: position) else { break }
            if position >= gap {
                reportDrops()
                gap = .max
            }
            let next = position &+ UInt64(RecordLayout.aligned(record.length))
            format(record, next: next, streams: true)
            position = next
        }
        reportUndescribedErrors(caughtUp: position == journal.reservedEnd)
        // Drained to the end with drops still unreported: space has returned, say so now.
        let reportedAtEnd = position == journal.reservedEnd && dropped.hasPending && reportDrops()
        guard position != cursor || reportedAtEnd else { return false }
        writeBatch(upTo: position)
        return true
    }

    /// Says how many errors were written with their type only (`describingError`), at most once a
    /// second while it goes on, and once the writer has caught up.
    private func reportUndescribedErrors(caughtUp: Bool) {
        guard undescribedErrors > 0 else { return }
        let now = monotonicNanoseconds()
        guard caughtUp || now >= undescribedErrorsReportDue else { return }
        appendNotice(
            .warning,
            "\(undescribedErrors) logged errors were written with their type only: describing them by reflection put the writer over half a journal behind",
            streams: true)
        undescribedErrors = 0
        undescribedErrorsReportDue = now + 1_000_000_000
    }

    @discardableResult
    private func reportDrops() -> Bool {
        let count = dropped.take()
        guard count > 0 else { return false }
        droppedNoticedInBatch += count
        appendNotice(.warning, "dropped \(count) log lines: the journal was full", streams: true)
        return true
    }

    private var isBatchFull: Bool {
        if let fileOutput, fileOutput.count >= Self.batchBytes { return true }
        return streamOutputs.contains { $0.count >= Self.batchBytes }
    }

    /// Formats one record into the batch: the file, and the streams unless `streams` is false (a
    /// replay into an existing file is not echoed to the console). Before a line that would push the
    /// file past its size limit, the batch so far is written and the file rotated.
    private func format(_ record: RecordView, next: UInt64, streams: Bool) {
        let position = next &- UInt64(RecordLayout.aligned(record.length))
        let record = record.flags.contains(.describesErrorLater) ? describingError(of: record, at: position) : record
        if let file, let fileOutput {
            let mark = fileOutput.count
            fileOutput.append(record)
            if rotation.rotatesBefore(lineBytes: fileOutput.count - mark, fileSize: file.size, batchedBytes: mark) {
                let line = fileOutput.takeBack(after: mark)
                // The records before this one are complete in the batch: write and checkpoint them.
                writeBatch(upTo: position)
                rotate()
                line.withUnsafeBytes { fileOutput.append($0) }
            }
        }
        if streams { for output in streamOutputs { output.append(record) } }
        linesInBatch += 1
    }

    /// The record with its error described, when the log call left that to the writer.
    ///
    /// An error without a description of its own is printed by reflection (~4.5 µs, thirty times a
    /// line's formatting): in a flood of them the writer fell behind, and the callers waited for
    /// journal space (or lost lines, with `OverflowPolicy.drop`). While the writer is more than half a
    /// journal behind, such an error keeps the type name its record holds, and a notice says how many
    /// did (`reportUndescribedErrors`); no line is lost and no caller waits on it.
    @inline(never)
    private func describingError(of record: RecordView, at position: UInt64) -> RecordView {
        // Against the batch's end, not the producers' position: reading that per record took its
        // cache line from the callers reserving on it.
        let farBehind = batchEnd &- position > journal.capacity / 2
        func describe(_ error: DeferredError) -> RecordView {
            error.withFacts { facts in
                if record.flags.contains(.captureCountedByWriter) {
                    facts.gates.gate(file: record.file, line: UInt(record.line))?._withUnsafeGuaranteedRef {
                        $0.countSuppressed()
                    }
                }
                if farBehind, !facts.describesItself {
                    undescribedErrors += 1
                    return record
                }
                return describedRecord.copy(
                    of: record, describing: error, facts: facts, limit: journal.maxRecordSize / 2)
            }
        }
        // Replaying a dead process's journal (no `errorDescriptions`), a record keeps its type name.
        guard let errorDescriptions else { return record }
        if let errorValue = record.errorValue {
            guard let copied = RecordErrorValue.read(errorValue) else { return record }
            var value = copied.value
            return value.withAddress { describe(DeferredError(copy: $0, facts: copied.facts)) }
        }
        guard let described = errorDescriptions.withDeferredError(for: position, describe) else { return record }
        if describedErrorsSweepDue == nil {
            describedErrorsSweepDue = monotonicNanoseconds() + DeferredErrorDescriptions.sweepInterval
        }
        return described
    }

    /// Releases the described errors no caller has released, once their sweep is due.
    private func releaseDescribedErrorsIfDue() {
        guard let due = describedErrorsSweepDue, monotonicNanoseconds() >= due else { return }
        errorDescriptions?.releaseDescribed()
        describedErrorsSweepDue = nil
    }

    /// Writes the batch and moves the checkpoint to `position` (all records before it are written).
    private func writeBatch(upTo position: UInt64) {
        var resumeAfterBatch = false
        if let file, let fileOutput, !fileOutput.isEmpty {
            if let error = file.write(fileOutput.bytes) {
                if failure.batchFailed(lines: UInt64(linesInBatch) + droppedNoticedInBatch, error: error) {
                    InternalDiagnostics.say(
                        "cannot write \(file.activePath): \(errnoDescription(error)); counting lost lines until writing succeeds"
                    )
                }
                failing.store(true, ordering: .relaxed)
            } else {
                recent.append(fileOutput.bytes)
                resumeAfterBatch = failure.resumeNotice != nil
            }
        } else if file == nil, let first = streamOutputs.first(where: \.holdsLines) {
            recent.append(first.bytes)
        }
        for output in streamOutputs { output.sendUnlessFile() }
        fileOutput?.removeAll()
        for output in streamOutputs { output.removeAll() }
        linesInBatch = 0
        droppedNoticedInBatch = 0
        if resumeAfterBatch { tryResumeAfterIOError() }
        publishCheckpoint(position)
    }

    /// Writes the "lost N lines" notice; when that works, the failure is over.
    private func tryResumeAfterIOError() {
        guard let file, let fileOutput, let notice = failure.resumeNotice else { return }
        appendNotice(.warning, notice, streams: false)
        defer { fileOutput.removeAll() }
        guard file.write(fileOutput.bytes) == nil else { return }
        recent.append(fileOutput.bytes)
        let lost = failure.end()
        failing.store(false, ordering: .relaxed)
        InternalDiagnostics.say("writing \(file.activePath) works again; \(lost) lines were lost")
    }

    private func publishCheckpoint(_ position: UInt64) {
        var checkpoint = Journal.Checkpoint(readPosition: position)
        if let identity = file?.checkpointIdentity {
            checkpoint.device = identity.device
            checkpoint.inode = identity.inode
            checkpoint.fileSize = identity.size
            checkpoint.fileStartNanoseconds = identity.start
        }
        journal.publish(checkpoint)
        journal.release(upTo: position)
        cursor = position
        // Sequentially consistent, as a waiter's increment of `waiters` is: either the waiter sees the
        // new position or the writer sees the waiter (a release store could pass the load after it).
        writtenPosition.store(position, ordering: .sequentiallyConsistent)
        if waiters.load(ordering: .sequentiallyConsistent) > 0 {
            lock.withLock {
                lock.broadcast()
                resumeAsyncWaiters()
            }
        }
    }

    // MARK: Rotation and timers

    private func rotate() {
        guard let file, let archive = file.rotate(now: settings.clock()) else { return }
        publishCheckpoint(cursor)
        maintainer?.archived(archive)
    }

    private func rotateByTimeIfDue() {
        guard let file, rotation.isDue(fileSize: file.size, fileStart: file.startNanoseconds, now: settings.clock())
        else { return }
        writeBatch(upTo: cursor)
        rotate()
    }

    private func runTimers() {
        rotateByTimeIfDue()
        releaseDescribedErrorsIfDue()
        // Probe a failing file even when nothing is logged, so that returning space is noticed.
        tryResumeAfterIOError()
    }

    private func nextTimerDelay() -> UInt64 {
        var delay: UInt64 = 60_000_000_000
        if failing.load(ordering: .relaxed) { delay = 1_000_000_000 }
        if let due = describedErrorsSweepDue {
            let now = monotonicNanoseconds()
            delay = min(delay, due > now ? due - now : 0)
        }
        if let file,
            let due = rotation.nanosecondsUntilDue(
                fileSize: file.size, fileStart: file.startNanoseconds, now: settings.clock())
        {
            delay = min(delay, due)
        }
        return max(delay, 1_000_000)
    }

    // MARK: Notices

    /// Formats a line of Blackbox's own (label `blackbox`) into the batch.
    private func appendNotice(_ level: LogLevel, _ text: String, streams: Bool) {
        let label = Array("blackbox".utf8)
        let message = Array(text.utf8.prefix(4096 - RecordLayout.headerSize - label.count))
        var writer = RecordWriter(base: notice)
        label.withUnsafeBytes { writer.append($0) }
        message.withUnsafeBytes { writer.append($0) }
        writer.writeHeader(
            timestamp: settings.clock(), threadID: 0, line: 0, kind: .text, level: level, labelCount: label.count,
            fileCount: 0, flags: [], messageCount: message.count, metadataCount: 0)
        notice.storeBytes(of: UInt32(writer.offset), toByteOffset: RecordLayout.length, as: UInt32.self)
        let record = RecordView(base: UnsafeRawPointer(notice))
        fileOutput?.append(record)
        if streams { for output in streamOutputs { output.append(record) } }
    }
}
