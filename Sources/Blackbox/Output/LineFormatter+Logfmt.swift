/// A record as one logfmt line, in the shape Go's `log/slog` text handler gave the format, which Loki,
/// Grafana and most log tools parse:
///
/// ```
/// time=2026-11-21T22:39:39.123Z level=info logger=net msg="card declined" request_id=r-1 source=App/main.swift:12 tid=7
/// ```
///
/// `msg` is always quoted; other values are bare unless they hold a space, a quote, `=` or a control
/// character (then quoted, escaped as JSON strings are). A key keeps the bytes logfmt allows in a key
/// (printable ASCII other than space, `=` and `"`); any other byte becomes `_`.
extension LineFormatter {
    mutating func appendLogfmt(_ record: RecordView, to out: inout OutputBuffer) {
        out.append(literal: "time=")
        timestamps.append(record.timestampNanoseconds, to: &out)
        out.append(literal: " level=")
        out.append(string: record.level.name)
        out.append(literal: " logger=")
        appendTextValue(record.label, to: &out)
        out.append(literal: " msg=\"")
        appendMessage(record, to: &out, escape: .json)
        out.append(UInt8(ascii: "\""))
        for (key, value) in record.metadata {
            out.append(UInt8(ascii: " "))
            Self.appendLogfmtKey(key, to: &out)
            out.append(UInt8(ascii: "="))
            appendTextValue(value, to: &out)
        }
        if record.file.count > 0 {
            let bare = Self.isBareTextValue(record.file)
            out.append(literal: bare ? " source=" : " source=\"")
            appendEscaped(record.file, to: &out, escape: .json)
            out.append(UInt8(ascii: ":"))
            out.appendDecimal(UInt64(record.line))
            if !bare { out.append(UInt8(ascii: "\"")) }
        }
        out.append(literal: " tid=")
        out.appendDecimal(UInt64(record.threadID))
        out.append(UInt8(ascii: "\n"))
    }

    static func appendLogfmtKey(_ key: UnsafeRawBufferPointer, to out: inout OutputBuffer) {
        guard !key.isEmpty else { return out.append(UInt8(ascii: "_")) }
        for byte in key {
            let allowed = byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "=") && byte != UInt8(ascii: "\"")
            out.append(allowed ? byte : UInt8(ascii: "_"))
        }
    }
}
