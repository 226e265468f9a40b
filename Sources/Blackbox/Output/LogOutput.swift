import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One destination of the writer's batches, with its own formatter and buffer: every committed line
/// is formatted into each output's buffer, and each buffer goes out once per batch. Destinations
/// differ only in what a write means: the file is rotated, checkpointed in the journal and has its
/// failed writes counted (the writer does that); a stream gets the whole batch in one `write(2)`; a
/// datagram socket gets one datagram per record, which is what a protocol with its own framing
/// (journald's native socket) needs. A new local destination is a case here and, if it needs one, a
/// format in `LineFormatter`.
///
/// A class, not a struct in an array: the buffer is non-copyable. Only the writer thread touches it.
final class LogOutput {
    enum Destination: Equatable {
        /// The active log file (the writer owns its `LogFileSink`): rotated, checkpointed in the
        /// journal, its failed writes counted.
        case file
        /// A descriptor the process already has open (stderr, stdout): written as it is, best effort.
        case stream(Int32)
        /// A connected datagram socket: one record per datagram, best effort (a full socket buffer or
        /// a record over the socket's size limit loses that record, never blocks the writer for long).
        case datagram(Int32)
    }

    /// What an output is before the writer makes it: where to, in which form.
    struct Spec: Equatable {
        var destination: Destination
        var format: LogFormat
        var colored = false
    }

    let destination: Destination
    @exclusivity(unchecked) private var formatter: LineFormatter
    @exclusivity(unchecked) private var buffer: OutputBuffer
    /// Where each record ends in `buffer`, kept only for a destination that sends records one by one.
    @exclusivity(unchecked) private var recordEnds: [Int] = []
    private let keepsRecordEnds: Bool

    init(_ spec: Spec, capacity: Int = 256 << 10) {
        self.destination = spec.destination
        self.formatter = LineFormatter(format: spec.format, colored: spec.colored)
        self.buffer = OutputBuffer(capacity: capacity)
        if case .datagram = spec.destination { keepsRecordEnds = true } else { keepsRecordEnds = false }
    }

    var count: Int { buffer.count }
    var isEmpty: Bool { buffer.isEmpty }
    var bytes: UnsafeRawBufferPointer { buffer.bytes }

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

    /// Sends the batch to a stream or a socket, whatever happens: nobody can act on a failed write to
    /// stderr, and a logger must not wait on a socket's reader. The file is the writer's to write.
    func sendUnlessFile() {
        guard !buffer.isEmpty else { return }
        switch destination {
        case .file:
            return
        case .stream(let descriptor):
            _ = writeFully(descriptor, buffer.bytes.baseAddress, buffer.count)
        case .datagram(let descriptor):
            guard let base = buffer.bytes.baseAddress else { return }
            var start = 0
            for end in recordEnds {
                _ = retryingEINTR { send(descriptor, base + start, end - start, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                start = end
            }
        }
    }
}
