import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One destination of the writer's batches, with its own formatter and buffer: every committed line
/// is formatted into each output's buffer, and each buffer goes out in one `write(2)` per batch.
/// Destinations differ only in what a write means: the file is rotated, checkpointed in the journal
/// and has its failed writes counted (the writer does that); a stream is written as it is. Another
/// stream (JSON Lines on stdout for containers) is configuration; a destination with a protocol of
/// its own (journald's datagrams) is one new case.
///
/// A class, not a struct in an array: the buffer is non-copyable. Only the writer thread touches it.
final class LogOutput {
    enum Destination {
        /// The active log file (the writer owns its `LogFileSink`): rotated, checkpointed in the
        /// journal, its failed writes counted.
        case file
        /// A descriptor the process already has open (stderr, stdout): written as it is, best effort.
        case stream(Int32)
    }

    let destination: Destination
    @exclusivity(unchecked) private var formatter: LineFormatter
    @exclusivity(unchecked) private var buffer: OutputBuffer

    init(_ destination: Destination, format: LogFormat, colored: Bool = false, capacity: Int = 256 << 10) {
        self.destination = destination
        self.formatter = LineFormatter(format: format, colored: colored)
        self.buffer = OutputBuffer(capacity: capacity)
    }

    var count: Int { buffer.count }
    var isEmpty: Bool { buffer.isEmpty }
    var bytes: UnsafeRawBufferPointer { buffer.bytes }

    @inline(__always)
    func append(_ record: RecordView) { formatter.append(record, to: &buffer) }

    func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(bytes) }

    /// Takes back what was appended after `mark` (a line that must go to the next file instead).
    func takeBack(after mark: Int) -> [UInt8] {
        let tail = Array(UnsafeRawBufferPointer(rebasing: buffer.bytes[mark...]))
        buffer.truncate(to: mark)
        return tail
    }

    func removeAll() { buffer.removeAll() }

    /// A stream's batch, whatever happens: nobody can act on a failed write to stderr.
    func writeToStream() {
        guard case .stream(let descriptor) = destination, !buffer.isEmpty else { return }
        _ = writeFully(descriptor, buffer.bytes.baseAddress, buffer.count)
    }
}
