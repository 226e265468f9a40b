import Synchronization

/// The tail of what was written, for `Blackbox.recentLines` (crash and non-fatal reports embed it).
/// A byte ring the writer appends each batch to: one lock and one copy per batch, nothing per line.
final class RecentLines: Sendable {
    private struct Ring {
        var bytes: [UInt8]
        var end = 0  // total bytes ever appended
    }
    private let ring: Mutex<Ring>
    private let lineCapacity: Int

    init(lineCapacity: Int) {
        self.lineCapacity = max(1, lineCapacity)
        // Room for `lineCapacity` lines of up to 256 bytes; longer lines leave fewer in the ring.
        ring = Mutex(Ring(bytes: [UInt8](repeating: 0, count: self.lineCapacity * 256)))
    }

    func append(_ batch: UnsafeRawBufferPointer) {
        guard !batch.isEmpty else { return }
        ring.withLock { ring in
            let size = ring.bytes.count
            let source = batch.count > size ? UnsafeRawBufferPointer(rebasing: batch[(batch.count - size)...]) : batch
            let skipped = batch.count - source.count
            var offset = (ring.end + skipped) % size
            var index = 0
            ring.bytes.withUnsafeMutableBytes { target in
                while index < source.count {
                    let n = min(source.count - index, size - offset)
                    target.baseAddress!.advanced(by: offset).copyMemory(
                        from: source.baseAddress!.advanced(by: index), byteCount: n)
                    index += n
                    offset = (offset + n) % size
                }
            }
            ring.end += batch.count
        }
    }

    /// The last `count` complete lines, oldest first, without their newlines.
    func last(_ count: Int) -> [String] {
        let snapshot: [UInt8] = ring.withLock { ring in
            let size = ring.bytes.count
            if ring.end <= size { return Array(ring.bytes[0..<ring.end]) }
            let start = ring.end % size
            return Array(ring.bytes[start...] + ring.bytes[..<start])
        }
        var lines = snapshot.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        // When the ring has wrapped, its first line is probably cut.
        if snapshot.count == lineCapacity * 256, snapshot.first != UInt8(ascii: "\n"), !lines.isEmpty {
            lines.removeFirst()
        }
        return lines.suffix(min(count, lineCapacity)).map { String(decoding: $0, as: UTF8.self) }
    }
}
