import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One destination of the writer's batches, with its own formatter and buffer: every committed line
/// is formatted into each output's buffer, and each buffer goes out once per batch. Destinations
/// differ only in what a write means: the file is rotated, checkpointed in the journal and has its
/// failed writes counted (the writer does that); a stream gets the whole batch in one `write(2)`; the
/// systemd journal gets one entry per record, each in a datagram of its own (`JournaldSocket`). A new
/// local destination is a case here and, if it needs one, a form in `LineFormatter`.
///
/// A class, not a struct in an array: the buffer is non-copyable. Only the writer thread touches it.
final class LogOutput {
    enum Destination: Equatable {
        /// The active log file (the writer owns its `LogFileSink`): rotated, checkpointed in the
        /// journal, its failed writes counted.
        case file
        /// A descriptor the process already has open (stderr, stdout): written as it is, best effort.
        case stream(Int32)
        /// The systemd journal's native socket: one entry per record (`LineFormatter+Journald.swift`),
        /// best effort (what a full journal has no room for within the options' wait per batch is not
        /// sent; the file's lines never wait longer). The options' identifier is set: the plan resolved it.
        case journald(JournaldOptions)
    }

    /// What an output is before the writer makes it: where to, in which form.
    struct Spec: Equatable {
        var destination: Destination
        var format: LogFormat
        var colored = false

        /// The output shows a record's calling function (journald's `CODE_FUNC`), so records keep it.
        var showsFunction: Bool {
            if case .journald = destination { return true }
            return false
        }

        /// This spec, or what stands in for it when its destination is not there: a journald output
        /// with no journal socket becomes text on stderr (where a service's unit usually sends its
        /// output anyway), said once on stderr. Reads the file system: called when a core opens.
        func available() -> Spec {
            guard case .journald(let options) = destination, !JournaldSocket.isPresent(at: options.socketPath)
            else { return self }
            InternalDiagnostics.report(
                "no systemd journal socket at \(options.socketPath); log lines go to stderr as text instead",
                key: "journald-absent")
            return Spec(destination: .stream(2), format: .text)
        }
    }

    let destination: Destination
    @exclusivity(unchecked) private var formatter: LineFormatter
    @exclusivity(unchecked) private var buffer: OutputBuffer
    /// Where each record ends in `buffer`, kept only for a destination that sends records one by one.
    @exclusivity(unchecked) private var recordEnds: [Int] = []
    private let keepsRecordEnds: Bool
    private let journald: JournaldSocket?

    init(_ spec: Spec, capacity: Int = 256 << 10) {
        self.destination = spec.destination
        self.buffer = OutputBuffer(capacity: capacity)
        if case .journald(let options) = spec.destination {
            let identifier = Array((options.identifier ?? "").utf8)
            self.formatter = LineFormatter(form: .journaldEntry, journaldIdentifier: identifier)
            self.journald = JournaldSocket(path: options.socketPath, maxWaitPerBatch: options.maxWaitPerBatch)
            self.keepsRecordEnds = true
        } else {
            self.formatter = LineFormatter(format: spec.format, colored: spec.colored)
            self.journald = nil
            self.keepsRecordEnds = false
        }
    }

    var count: Int { buffer.count }
    var isEmpty: Bool { buffer.isEmpty }
    var bytes: UnsafeRawBufferPointer { buffer.bytes }
    /// False for an output whose buffer holds journal entries rather than lines.
    var holdsLines: Bool { journald == nil }

    @inline(__always)
    func append(_ record: RecordView) {
        formatter.append(record, to: &buffer)
        if keepsRecordEnds { recordEnds.append(buffer.count) }
    }

    /// A line formatted elsewhere (a file's line carried over a rotation); a record of its own.
    func append(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(bytes)
        if keepsRecordEnds { recordEnds.append(buffer.count) }
    }

    /// Takes back what was appended after `mark` (a line that must go to the next file instead).
    func takeBack(after mark: Int) -> [UInt8] {
        let tail = Array(UnsafeRawBufferPointer(rebasing: buffer.bytes[mark...]))
        buffer.truncate(to: mark)
        recordEnds.removeAll { $0 > mark }
        return tail
    }

    func removeAll() {
        buffer.removeAll()
        recordEnds.removeAll(keepingCapacity: true)
    }

    /// Sends the batch to a stream or the journal, whatever happens: nobody can act on a failed write
    /// to stderr, and a logger must not wait long on a reader. The file is the writer's to write.
    func sendUnlessFile() {
        guard !buffer.isEmpty else { return }
        switch destination {
        case .file:
            return
        case .stream(let descriptor):
            _ = writeFully(descriptor, buffer.bytes.baseAddress, buffer.count)
        case .journald:
            journald?.sendBatch(buffer.bytes, recordEnds: recordEnds)
        }
    }
}
