/// Turns journal records into output lines, on the writer thread.
///
/// Text: `2026-11-21T22:39:39.123Z INFO  net: message key=value (Module/File.swift:12)`
/// JSON Lines: `{"ts":"…","level":"info","label":"net","msg":"…","meta":{"key":"value"},"file":"…","line":12,"tid":42}`
///
/// One record is always exactly one line, and nothing in it can pass for another record or steer a
/// terminal: in labels, messages, metadata keys and values and file names, both formats escape every
/// control character (C0, DEL and C1, so ESC, VT, FF and NEL too), the Unicode line and paragraph
/// separators and the bidirectional overrides, as `\n`, `\r`, `\t` or `\uXXXX`; bytes that are not
/// UTF-8 become `\xNN` in text and U+FFFD in JSON. `grep`, `tail -F`, terminals and line-oriented
/// collectors never see a half or forged record.
struct LineFormatter {
    /// What one record becomes: a line in one of the public formats, or a journal entry (the fields of
    /// journald's native protocol, `LineFormatter+Journald.swift`), which only a journald output asks for.
    /// A trivial enum, so that the writer's switch per record copies nothing (a payload holding a
    /// reference here cost W2 native 4-6 % of its rate: a retain and release per record).
    enum Form: Equatable {
        case text, jsonLines, ecs, logfmt, journaldEntry
    }

    let form: Form
    let colored: Bool
    /// `SYSLOG_IDENTIFIER` of a journal entry; empty in the other forms.
    let journaldIdentifier: [UInt8]
    var timestamps = TimestampFormatter()

    init(format: LogFormat, colored: Bool = false) {
        let form: Form =
            switch format {
            case .text: .text
            case .jsonLines: .jsonLines
            case .ecs: .ecs
            case .logfmt: .logfmt
            }
        self.init(form: form, colored: colored)
    }

    init(form: Form, colored: Bool = false, journaldIdentifier: [UInt8] = []) {
        self.form = form
        self.colored = colored
        self.journaldIdentifier = journaldIdentifier
    }

    mutating func append(_ record: RecordView, to out: inout OutputBuffer) {
        // Worst case: every byte escaped as \u00XX, plus the fixed parts of a line.
        out.reserve(record.length * 6 + 256)
        switch form {
        case .text: appendText(record, to: &out)
        case .jsonLines: appendJSON(record, to: &out)
        case .ecs: appendECS(record, to: &out)
        case .logfmt: appendLogfmt(record, to: &out)
        case .journaldEntry: appendJournaldEntry(record, to: &out)
        }
    }

    // MARK: Text

    private mutating func appendText(_ record: RecordView, to out: inout OutputBuffer) {
        timestamps.append(record.timestampNanoseconds, to: &out)
        out.append(UInt8(ascii: " "))
        let level = record.level
        if colored { out.append(literal: Self.colorCode(level)) }
        out.append(literal: Self.tag(level))
        if colored { out.append(literal: "\u{1B}[0m") }
        out.append(UInt8(ascii: " "))
        appendEscaped(record.label, to: &out, escape: .text)
        out.append(literal: ": ")
        appendMessage(record, to: &out, escape: .text)
        for (key, value) in record.metadata {
            out.append(UInt8(ascii: " "))
            appendEscaped(key, to: &out, escape: .text)
            out.append(UInt8(ascii: "="))
            appendTextValue(value, to: &out)
        }
        if record.file.count > 0 {
            out.append(literal: " (")
            appendEscaped(record.file, to: &out, escape: .text)
            out.append(UInt8(ascii: ":"))
            out.appendDecimal(UInt64(record.line))
            out.append(UInt8(ascii: ")"))
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// Values with spaces, quotes or `=` are quoted so `key=value` pairs can be split reliably.
    func appendTextValue(_ value: UnsafeRawBufferPointer, to out: inout OutputBuffer) {
        // Almost every value (ids, names, numbers) is bare: one scan instead of two.
        if Self.isBareTextValue(value) { return out.append(value) }
        let needsQuotes =
            value.isEmpty || value.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") }
        if needsQuotes { out.append(UInt8(ascii: "\"")) }
        appendEscaped(value, to: &out, escape: needsQuotes ? .json : .text)
        if needsQuotes { out.append(UInt8(ascii: "\"")) }
    }

    /// True when `value` is written as it is, unquoted and unescaped: not empty, and only printable
    /// ASCII other than space, `"` and `=`. Whole words as in `appendEscaped` (this scan was 9 % of the
    /// writer's time byte by byte, in the server benchmark's profile).
    @inline(__always)
    static func isBareTextValue(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress, !value.isEmpty else { return false }
        let count = value.count
        guard count >= 8 else {
            return value.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "=") }
        }
        var i = 0
        while i + 8 <= count {
            if mayNeedQuotes(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { return false }
            i += 8
        }
        return i == count || !mayNeedQuotes(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
    }

    /// True when some byte of `word` is a space or below, DEL or above, `"` or `=` (false positives
    /// allowed, as in `Escape.mayNeedEscape`).
    @inline(__always)
    private static func mayNeedQuotes(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let spaceOrBelow = (word &- 0x2121_2121_2121_2121) & ~word
        let del = word ^ 0x7F7F_7F7F_7F7F_7F7F
        let quote = word ^ 0x2222_2222_2222_2222
        let equals = word ^ 0x3D3D_3D3D_3D3D_3D3D
        let suspicious =
            spaceOrBelow | word | (del &- ones) & ~del | (quote &- ones) & ~quote | (equals &- ones) & ~equals
        return suspicious & 0x8080_8080_8080_8080 != 0
    }

    static func tag(_ level: LogLevel) -> StaticString {
        switch level {
        case .trace: "TRACE"
        case .debug: "DEBUG"
        case .info: "INFO "
        case .notice: "NOTE "
        case .warning: "WARN "
        case .error: "ERROR"
        case .critical, .off: "CRIT "
        }
    }

    private static func colorCode(_ level: LogLevel) -> StaticString {
        switch level {
        case .trace, .debug: "\u{1B}[2m"
        case .info: "\u{1B}[32m"
        case .notice: "\u{1B}[36m"
        case .warning: "\u{1B}[33m"
        case .error: "\u{1B}[31m"
        case .critical, .off: "\u{1B}[1;31m"
        }
    }

    // MARK: JSON

    private mutating func appendJSON(_ record: RecordView, to out: inout OutputBuffer) {
        out.append(literal: "{\"ts\":\"")
        timestamps.append(record.timestampNanoseconds, to: &out)
        out.append(literal: "\",\"level\":\"")
        out.append(string: record.level.name)
        out.append(literal: "\",\"label\":\"")
        appendEscaped(record.label, to: &out, escape: .json)
        out.append(literal: "\",\"msg\":\"")
        appendMessage(record, to: &out, escape: .json)
        out.append(UInt8(ascii: "\""))
        let metadata = record.metadata
        if !metadata.isEmpty {
            // OpenTelemetry's names for the trace context in non-OTLP formats, at the top level.
            for (key, value) in metadata where Self.isTraceContextKey(key) {
                out.append(literal: ",\"")
                out.append(key)
                out.append(literal: "\":\"")
                appendEscaped(value, to: &out, escape: .json)
                out.append(UInt8(ascii: "\""))
            }
            var first = true
            for (key, value) in metadata where !Self.isTraceContextKey(key) {
                out.append(literal: first ? ",\"meta\":{\"" : ",\"")
                first = false
                appendEscaped(key, to: &out, escape: .json)
                out.append(literal: "\":\"")
                appendEscaped(value, to: &out, escape: .json)
                out.append(UInt8(ascii: "\""))
            }
            if !first { out.append(UInt8(ascii: "}")) }
        }
        if record.file.count > 0 {
            out.append(literal: ",\"file\":\"")
            appendEscaped(record.file, to: &out, escape: .json)
            out.append(literal: "\",\"line\":")
            out.appendDecimal(UInt64(record.line))
        }
        out.append(literal: ",\"tid\":")
        out.appendDecimal(UInt64(record.threadID))
        out.append(literal: "}\n")
    }

    /// `trace_id`, `span_id` or `trace_flags`: the keys swift-otel's metadata provider sets, and the
    /// names OpenTelemetry gives the trace context in formats other than OTLP.
    @inline(__always)
    static func isTraceContextKey(_ key: UnsafeRawBufferPointer) -> Bool {
        switch key.count {
        case 7: key.elementsEqual("span_id".utf8)
        case 8: key.elementsEqual("trace_id".utf8)
        case 11: key.elementsEqual("trace_flags".utf8)
        default: false
        }
    }

    // MARK: Message bodies

    /// How bytes are escaped. Both formats escape control characters, line separators and bidi
    /// overrides (see the type's documentation); JSON also escapes quotes and backslashes. Text keeps
    /// backslashes as they are: it is for people (paths stay readable), JSON Lines is for machines.
    /// A journal entry's values are length-framed, so they keep every byte as it is (`none`).
    enum Escape {
        case text, json, none

        /// True when some byte of `word` may need escaping (false positives allowed): a byte below
        /// 0x20, DEL, any non-ASCII byte (the slow path decodes it), and for JSON a quote or a
        /// backslash. Classic SWAR "has byte less than" / "has zero byte".
        @inline(__always)
        func mayNeedEscape(_ word: UInt64) -> Bool {
            if case .none = self { return false }
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            let control = (word &- 0x2020_2020_2020_2020) & ~word
            let del = word ^ 0x7F7F_7F7F_7F7F_7F7F
            var suspicious = control | word | (del &- ones) & ~del
            if case .json = self {
                let quote = word ^ 0x2222_2222_2222_2222
                let backslash = word ^ 0x5C5C_5C5C_5C5C_5C5C
                suspicious |= (quote &- ones) & ~quote | (backslash &- ones) & ~backslash
            }
            return suspicious & highs != 0
        }

        @inline(__always)
        func needsEscape(_ byte: UInt8) -> Bool {
            switch self {
            case .text: byte < 0x20 || byte >= 0x7F
            case .json: byte < 0x20 || byte >= 0x7F || byte == 0x22 || byte == 0x5C
            case .none: false
            }
        }

        /// The escape for an ASCII byte, or nil when it is written as it is.
        @inline(__always)
        func replacement(forASCII byte: UInt8) -> StaticString? {
            switch byte {
            case UInt8(ascii: "\n"): return "\\n"
            case UInt8(ascii: "\r"): return "\\r"
            case UInt8(ascii: "\t"): return "\\t"
            case 0x7F: return "\\u007f"
            case UInt8(ascii: "\""): return self == .json ? "\\\"" : nil
            case UInt8(ascii: "\\"): return self == .json ? "\\\\" : nil
            case ..<0x20: return LineFormatter.controlEscapes[Int(byte)]
            default: return nil
            }
        }
    }

    @inline(__always)
    func appendMessage(_ record: RecordView, to out: inout OutputBuffer, escape: Escape) {
        switch record.kind {
        case .text?:
            appendEscaped(record.message, to: &out, escape: escape)
        case .segments?:
            appendSegments(record.message, to: &out, escape: escape)
        case nil:
            out.append(literal: "<unknown record kind>")
        }
        if record.flags.contains(.truncated) && record.kind == .text {
            out.append(literal: "…[truncated]")
        }
    }

    /// Renders `FastLogMessage` segments; stops quietly at anything malformed.
    @inline(__always)
    private func appendSegments(_ bytes: UnsafeRawBufferPointer, to out: inout OutputBuffer, escape: Escape) {
        var offset = 0
        while offset < bytes.count {
            guard let tag = SegmentBuffer.Tag(rawValue: bytes[offset]) else { return }
            offset += 1
            switch tag {
            case .text:
                guard offset + 2 <= bytes.count else { return }
                let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
                offset += 2
                guard offset + length <= bytes.count else { return }
                appendEscaped(
                    UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]), to: &out, escape: escape)
                offset += length
            case .signed, .unsigned, .double:
                guard offset + 8 <= bytes.count else { return }
                let bits = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset += 8
                switch tag {
                case .signed: out.appendDecimal(Int64(bitPattern: bits))
                case .unsigned: out.appendDecimal(bits)
                default: out.append(string: Double(bitPattern: bits).description)
                }
            case .bool:
                guard offset < bytes.count else { return }
                out.append(literal: bytes[offset] != 0 ? "true" : "false")
                offset += 1
            case .truncated:
                guard offset + 4 <= bytes.count else { return }
                out.append(literal: "…[+")
                out.appendDecimal(UInt64(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                out.append(literal: " bytes cut]")
                offset += 4
            }
        }
    }

    @inline(__always)
    func appendEscaped(_ bytes: UnsafeRawBufferPointer, to out: inout OutputBuffer, escape: Escape) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        // Fast path, almost always taken: nothing to escape. Whole words, then the last word again
        // (overlapping, so no byte past the end is read), or single bytes when shorter than a word.
        var clean = true
        if count >= 8 {
            var i = 0
            while clean && i + 8 <= count {
                clean = !escape.mayNeedEscape(base.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                i += 8
            }
            if clean && i < count {
                clean = !escape.mayNeedEscape(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
            }
        } else {
            var i = 0
            while clean && i < count {
                clean = !escape.needsEscape(base.load(fromByteOffset: i, as: UInt8.self))
                i += 1
            }
        }
        if clean { return out.append(bytes) }
        appendEscapedSlowly(bytes, to: &out, escape: escape)
    }

    @inline(never)
    private func appendEscapedSlowly(_ bytes: UnsafeRawBufferPointer, to out: inout OutputBuffer, escape: Escape) {
        var start = 0
        var i = 0
        func flush(upTo end: Int) {
            if end > start { out.append(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
        }
        while i < bytes.count {
            let byte = bytes[i]
            if byte < 0x80 {
                if let replacement = escape.replacement(forASCII: byte) {
                    flush(upTo: i)
                    out.append(literal: replacement)
                    start = i + 1
                }
                i += 1
                continue
            }
            guard let (scalar, length) = Self.decodeUTF8(bytes, at: i) else {
                flush(upTo: i)
                switch escape {
                case .text:
                    out.append(literal: "\\x")
                    Self.appendHex(UInt32(byte), digits: 2, to: &out)
                case .json: out.append(literal: "\\ufffd")
                case .none: out.append(byte)
                }
                i += 1
                start = i
                continue
            }
            if Self.breaksLinesOrDisplay(scalar) {
                flush(upTo: i)
                out.append(literal: "\\u")
                Self.appendHex(scalar, digits: 4, to: &out)
                start = i + length
            }
            i += length
        }
        flush(upTo: bytes.count)
    }

    /// C1 controls (NEL among them, which some tools take as a line break), the Unicode line and
    /// paragraph separators, and the bidirectional embeddings, overrides and isolates, which make a
    /// terminal show text in another order than it was written.
    private static func breaksLinesOrDisplay(_ scalar: UInt32) -> Bool {
        (0x80...0x9F).contains(scalar) || (0x2028...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar)
    }

    /// The scalar encoded at `i` and its length, or nil for bytes that are not well-formed UTF-8
    /// (overlong forms, surrogates and values past U+10FFFF included).
    private static func decodeUTF8(_ bytes: UnsafeRawBufferPointer, at i: Int) -> (UInt32, Int)? {
        let lead = bytes[i]
        let length: Int
        var scalar: UInt32
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: (length, scalar) = (2, UInt32(lead & 0x1F))
        case 0xE0...0xEF:
            (length, scalar) = (3, UInt32(lead & 0x0F))
            if lead == 0xE0 { low = 0xA0 }
            if lead == 0xED { high = 0x9F }
        case 0xF0...0xF4:
            (length, scalar) = (4, UInt32(lead & 0x07))
            if lead == 0xF0 { low = 0x90 }
            if lead == 0xF4 { high = 0x8F }
        default: return nil
        }
        guard i + length <= bytes.count else { return nil }
        for k in 1..<length {
            let byte = bytes[i + k]
            guard byte >= (k == 1 ? low : 0x80), byte <= (k == 1 ? high : 0xBF) else { return nil }
            scalar = scalar << 6 | UInt32(byte & 0x3F)
        }
        return (scalar, length)
    }

    private static func appendHex(_ value: UInt32, digits: Int, to out: inout OutputBuffer) {
        let hex: StaticString = "0123456789abcdef"
        for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
            out.append(hex.utf8Start[Int((value >> UInt32(shift)) & 0xF)])
        }
    }

    private static let controlEscapes: [StaticString] = [
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\u0008", "\\u0009", "\\u000a", "\\u000b", "\\u000c", "\\u000d", "\\u000e", "\\u000f",
        "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
        "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    ]
}
