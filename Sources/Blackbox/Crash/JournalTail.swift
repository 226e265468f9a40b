/// Turns the journal bytes a crash report carries into text log lines.
///
/// The handler copies the ring's last bytes as they were: the copy may start in the middle of a
/// record and end in one that was never committed. Records sit at 8-aligned stream positions and
/// carry their own position in the commit word, so scanning every 8 bytes for a valid, checksummed
/// record finds exactly the intact ones (the same rule recovery uses).
enum JournalTail {
    static func lines(bytes: [UInt8], startPosition: UInt64, limit: Int) -> [String] {
        guard limit > 0, !bytes.isEmpty, startPosition % 8 == 0 else { return [] }
        var formatter = LineFormatter(format: .text)
        var out = OutputBuffer(capacity: 64 << 10)
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset + RecordLayout.headerSize <= raw.count {
                let position = startPosition + UInt64(offset)
                let record = RecordView(base: base + offset)
                let word = (base + offset).loadUnaligned(as: UInt64.self)
                let length = record.length
                guard word == position | RecordLayout.commitBit, length >= RecordLayout.headerSize,
                    offset + length <= raw.count, record.isWellFormed,
                    journalChecksum(
                        base + offset + RecordLayout.timestamp, count: length - RecordLayout.timestamp, seed: position)
                        == (base + offset).loadUnaligned(fromByteOffset: RecordLayout.checksum, as: UInt32.self)
                else {
                    offset += 8
                    continue
                }
                formatter.append(record, to: &out)
                offset += RecordLayout.aligned(length)
            }
        }
        let text = String(decoding: out.bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        return Array(lines.suffix(limit))
    }
}
