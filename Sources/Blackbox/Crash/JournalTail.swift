/// Turns the journal bytes a crash report carries into text log lines.
///
/// The handler copies the ring's last bytes as they were: the copy may start in the middle of a
/// record and end in one that was never committed. `JournalReader.scan` keeps exactly the intact
/// records, by the same rule recovery uses.
package enum JournalTail {
    package static func lines(bytes: [UInt8], startPosition: UInt64, limit: Int) -> [String] {
        guard limit > 0, !bytes.isEmpty, startPosition % 8 == 0 else { return [] }
        var formatter = LineFormatter(format: .text)
        var out = OutputBuffer(capacity: 64 << 10)
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            _ = JournalReader.scan(base, count: raw.count, start: startPosition) { record, _ in
                formatter.append(record, to: &out)
            }
        }
        let text = String(decoding: out.bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        return Array(lines.suffix(limit))
    }
}
