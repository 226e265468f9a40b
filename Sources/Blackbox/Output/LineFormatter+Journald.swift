/// A record as a systemd journal entry (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/), one per
/// datagram:
///
/// ```
/// MESSAGE       the message, every byte as it is (newlines included: journalctl shows them)
/// PRIORITY      syslog's: 7 trace and debug, 6 info, 5 notice, 4 warning, 3 error, 2 critical
/// SYSLOG_IDENTIFIER  the configured identifier (the app's name)
/// LOGGER        the swift-log label
/// CODE_FILE, CODE_LINE  the call site, when known
/// CODE_FUNC     the calling function, when known (records keep it only while a journald output runs)
/// TID           the calling thread (journald's own _PID is the process)
/// <KEY>         each metadata value, its key as a journal field name (below)
/// ```
///
/// Every text value is length-framed (`NAME\n`, a little-endian u64 length, the bytes, `\n`), the
/// form the protocol has for values that may hold a newline, so nothing in a value can end the field
/// or forge another. Field names allow `A-Z`, `0-9` and `_`, start with a letter (journald drops
/// client fields that start with `_`: those are the ones it vouches for) and have at most 64
/// characters: a key is upper-cased, other characters become `_`, leading digits and underscores are
/// dropped (`trace_id` → `TRACE_ID`, `http.method` → `HTTP_METHOD`, `_x` → `X`), an empty result is
/// `METADATA`, and a key that would name one of the fields above gets a `METADATA_` prefix, so
/// metadata never overwrites what the entry says of itself.
extension LineFormatter {
    mutating func appendJournaldEntry(_ record: RecordView, to out: inout OutputBuffer) {
        var field = beginFramedField("MESSAGE", in: &out)
        appendMessage(record, to: &out, escape: .none)
        endFramedField(field, in: &out)

        out.append(literal: "PRIORITY=")
        out.appendDecimal(UInt64(Self.syslogPriority(record.level)))
        out.append(UInt8(ascii: "\n"))

        field = beginFramedField("SYSLOG_IDENTIFIER", in: &out)
        journaldIdentifier.withUnsafeBytes { out.append($0) }
        endFramedField(field, in: &out)

        field = beginFramedField("LOGGER", in: &out)
        out.append(record.label)
        endFramedField(field, in: &out)

        if record.file.count > 0 {
            field = beginFramedField("CODE_FILE", in: &out)
            out.append(record.file)
            endFramedField(field, in: &out)
            out.append(literal: "CODE_LINE=")
            out.appendDecimal(UInt64(record.line))
            out.append(UInt8(ascii: "\n"))
        }
        let function = record.function
        if function.count > 0 {
            field = beginFramedField("CODE_FUNC", in: &out)
            out.append(function)
            endFramedField(field, in: &out)
        }
        if record.threadID != 0 {
            out.append(literal: "TID=")
            out.appendDecimal(UInt64(record.threadID))
            out.append(UInt8(ascii: "\n"))
        }
        for (key, value) in record.metadata {
            Self.appendFieldName(forKey: key, to: &out)
            field = beginFramedValue(in: &out)
            out.append(value)
            endFramedField(field, in: &out)
        }
    }

    static func syslogPriority(_ level: LogLevel) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical, .off: 2
        }
    }

    /// The fields an entry writes of itself, which a metadata key may not name.
    private static let ownFields: [StaticString] = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "TID",
    ]
    private static let maxFieldNameLength = 64

    /// Writes the journal field name for a metadata key (the rule is in the type's documentation).
    static func appendFieldName(forKey key: UnsafeRawBufferPointer, to out: inout OutputBuffer) {
        let start = out.count
        appendSanitizedName(key, limit: maxFieldNameLength, to: &out)
        if out.count == start { return out.append(literal: "METADATA") }
        let name = UnsafeRawBufferPointer(rebasing: out.bytes[start...])
        guard
            ownFields.contains(where: {
                name.elementsEqual(UnsafeRawBufferPointer(start: $0.utf8Start, count: $0.utf8CodeUnitCount))
            })
        else { return }
        out.truncate(to: start)
        out.append(literal: "METADATA_")
        appendSanitizedName(key, limit: maxFieldNameLength - 9, to: &out)
    }

    private static func appendSanitizedName(_ key: UnsafeRawBufferPointer, limit: Int, to out: inout OutputBuffer) {
        var written = 0
        for byte in key where written < limit {
            let character: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): character = byte
            case UInt8(ascii: "a")...UInt8(ascii: "z"): character = byte - 32
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                // Not as the first character: a name starts with a letter.
                if written == 0 { continue }
                character = byte
            default:
                if written == 0 { continue }
                character = UInt8(ascii: "_")
            }
            out.append(character)
            written += 1
        }
    }

    /// `NAME\n` and room for the value's length; the value follows, then `endFramedField`.
    private func beginFramedField(_ name: StaticString, in out: inout OutputBuffer) -> Int {
        out.append(literal: name)
        return beginFramedValue(in: &out)
    }

    private func beginFramedValue(in out: inout OutputBuffer) -> Int {
        out.append(UInt8(ascii: "\n"))
        let lengthOffset = out.count
        out.append(literal: "\0\0\0\0\0\0\0\0")
        return lengthOffset
    }

    private func endFramedField(_ lengthOffset: Int, in out: inout OutputBuffer) {
        out.overwrite(littleEndian: UInt64(out.count - lengthOffset - 8), at: lengthOffset)
        out.append(UInt8(ascii: "\n"))
    }
}
