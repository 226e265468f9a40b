import BlackboxFormat
import BlackboxOTLP
import Foundation

/// OTLP log records as text lines in Blackbox's log format (`LogLine`), so the log indexer, log search
/// and the trace page treat them like an app's log file:
/// `2026-12-01T08:00:00.120Z ERROR checkout: payment refused trace_id=… span_id=… service.name=shop order=42`.
/// The label is the instrumentation scope (the logger's name) or else the service; the resource's
/// `service.*` attributes and the record's own follow the body.
///
/// The receiver and the reader of a stored request both go through `lines(of:)`, so a record refused
/// when it arrived is never shown later, and `partialSuccess` counts exactly the records left out.
enum OTLPLogLines {
    /// Records one request may carry (exporters batch 512 by default, an OpenTelemetry Collector
    /// 8,192); the rest are refused.
    static let maxRecordsPerRequest = 10_000
    /// A record's encoded bytes: a larger one is refused undecoded (its body is cut to
    /// `maxValueBytes` anyway), and so are a resource or scope this large (the whole request).
    static let maxRecordBytes = 128 << 10
    /// Attributes written per record (the resource's `service.*` ones included); the rest are left out.
    static let maxAttributes = 32
    /// A body or attribute value longer than this is cut.
    static let maxValueBytes = 4 << 10
    /// A line is cut here, as the log indexer cuts every line it reads (`LogIndexer.maxLineLength`).
    static let maxLineBytes = LogIndexer.maxLineLength

    struct Rendered: Equatable {
        var lines: [String] = []
        var rejected = 0
        /// Why records were refused, for `partialSuccess.error_message`.
        var reasons: [String] = []

        var reason: String? { reasons.isEmpty ? nil : reasons.joined(separator: "; ") }
    }

    /// The records of a request in protobuf (`OTLPLogRecords`), each decoded on its own; a request
    /// whose outer levels are broken is an `OTLPDecodingError`.
    static func lines(ofProtobuf data: Data, limit: Int = maxRecordsPerRequest) throws -> Rendered {
        var rendered = Rendered()
        var refused: [Refusal: Int] = [:]
        try OTLPLogRecords(protobuf: data, maxPartBytes: maxRecordBytes).walk { context, encoded in
            guard rendered.lines.count < limit else {
                refused[.overLimit, default: 0] += 1
                return
            }
            guard encoded.bytes.count <= maxRecordBytes else {
                refused[.tooLarge, default: 0] += 1
                return
            }
            guard let record = try? encoded.decoded() else {
                refused[.malformed, default: 0] += 1
                return
            }
            guard [0, 16].contains(record.traceID.count) else {
                refused[.traceID, default: 0] += 1
                return
            }
            guard [0, 8].contains(record.spanID.count) else {
                refused[.spanID, default: 0] += 1
                return
            }
            let service = context.resource.attributes.filter { $0.key.hasPrefix("service.") }
            let label =
                context.scope.name.isEmpty
                ? service.first { $0.key == "service.name" }.map { text($0.value) } ?? "otlp" : context.scope.name
            rendered.lines.append(line(record, label: label, service: service))
        }
        for refusal in Refusal.allCases {
            guard let count = refused[refusal] else { continue }
            rendered.rejected += count
            rendered.reasons.append("\(count) \(count == 1 ? "record" : "records") \(refusal.reason(limit: limit))")
        }
        return rendered
    }

    /// A request decoded whole (a JSON one, the tests'), read by the same rules.
    static func lines(of request: OTLPLogsRequest, limit: Int = maxRecordsPerRequest) throws -> Rendered {
        try lines(ofProtobuf: request.encoded(.protobuf), limit: limit)
    }

    private enum Refusal: CaseIterable {
        case traceID, spanID, tooLarge, malformed, overLimit

        func reason(limit: Int) -> String {
            switch self {
            case .traceID: "with a trace_id that is not 16 bytes"
            case .spanID: "with a span_id that is not 8 bytes"
            case .tooLarge: "larger than \(maxRecordBytes >> 10) KiB"
            case .malformed: "not decodable as a log record"
            case .overLimit: "past the \(limit) one request may carry"
            }
        }
    }

    static func line(_ record: OTLPLogRecord, label: String, service: [OTLPKeyValue]) -> String {
        let nanoseconds = record.timeUnixNano != 0 ? record.timeUnixNano : record.observedTimeUnixNano
        let time = Date(timeIntervalSince1970: Double(nanoseconds / 1_000_000) / 1_000)
        var message = cut(text(record.body))
        if !record.eventName.isEmpty { message += " event.name=\(cut(record.eventName))" }
        if !record.traceID.isEmpty { message += " trace_id=\(lowercaseHex(record.traceID))" }
        if !record.spanID.isEmpty { message += " span_id=\(lowercaseHex(record.spanID))" }
        for attribute in (service + record.attributes).prefix(maxAttributes) {
            message += " \(cut(attribute.key))=\(cut(text(attribute.value)))"
        }
        let text = LogLine(time: time, level: level(record), label: label, message: message).text
        return text.utf8.count <= maxLineBytes ? text : lineSanitizer.sanitize(text)
    }

    // MARK: lines as records (the forwarder's direction)

    /// A line of a log file as an OTLP record, and the label it had (its scope): Blackbox's text
    /// form read into time, level, label and message, `trace_id=` and `span_id=` taken out of the
    /// message into the record's ids; a line of another shape is the record's body, as it is, at
    /// `fallbackTime`. `line(_:label:service:)` of the result is the line again (`OTLPLogLinesTests`).
    static func record(ofLine text: String, fallbackTime: Date) -> (label: String?, record: OTLPLogRecord) {
        var record = OTLPLogRecord()
        guard let line = LogLine(parsing: text) else {
            record.timeUnixNano = nanoseconds(fallbackTime)
            record.observedTimeUnixNano = record.timeUnixNano
            record.body.stringValue = text
            return (nil, record)
        }
        record.timeUnixNano = nanoseconds(line.time)
        record.observedTimeUnixNano = record.timeUnixNano
        (record.severityNumber, record.severityText) = severity(ofTag: line.level)
        var words = line.message.split(separator: " ", omittingEmptySubsequences: false)
        func take(_ key: String, bytes: Int) -> Data? {
            guard let index = words.firstIndex(where: { $0.hasPrefix(key) }),
                let id = BlackboxFormat.bytes(fromHex: words[index].dropFirst(key.count)).map({ Data($0) }),
                id.count == bytes, id.contains(where: { $0 != 0 })
            else { return nil }
            words.remove(at: index)
            return id
        }
        if let trace = take("trace_id=", bytes: 16) { record.traceID = trace }
        if let span = take("span_id=", bytes: 8) { record.spanID = span }
        record.body.stringValue = words.joined(separator: " ")
        return (line.label, record)
    }

    /// OTLP's severity for a Blackbox tag: the first step of its level (`note` the second of info).
    static func severity(ofTag tag: String) -> (OTLPSeverity, String) {
        switch tag.lowercased() {
        case "trace": (.trace, "TRACE")
        case "debug": (.debug, "DEBUG")
        case "note", "notice": (.info2, "NOTICE")
        case "warn", "warning": (.warn, "WARN")
        case "error": (.error, "ERROR")
        case "crit", "critical": (.fatal, "CRITICAL")
        default: (.info, "INFO")
        }
    }

    private static func nanoseconds(_ time: Date) -> UInt64 {
        UInt64(max(0, time.timeIntervalSince1970 * 1_000).rounded()) * 1_000_000
    }

    /// Blackbox's tag for OTLP's severity number (four steps per level), or else its text.
    static func level(_ record: OTLPLogRecord) -> String {
        switch record.severityNumber.rawValue {
        case 1...4: "trace"
        case 5...8: "debug"
        case 10: "note"
        case 9...12: "info"
        case 13...16: "warn"
        case 17...20: "error"
        case 21...: "crit"
        default:
            switch record.severityText.lowercased() {
            case let text where text.hasPrefix("trace"): "trace"
            case let text where text.hasPrefix("debug"): "debug"
            case let text where text.hasPrefix("warn"): "warn"
            case let text where text.hasPrefix("err"): "error"
            case let text where text.hasPrefix("fatal") || text.hasPrefix("crit"): "crit"
            default: "info"
            }
        }
    }

    /// A value as text: strings as they are, lists and maps in swift-log's bracket notation, bytes
    /// in base64.
    static func text(_ value: OTLPAnyValue) -> String {
        switch value.value {
        case .stringValue(let text): text
        case .boolValue(let flag): String(flag)
        case .intValue(let number): String(number)
        case .doubleValue(let number): String(number)
        case .bytesValue(let bytes): bytes.base64EncodedString()
        case .arrayValue(let list): "[" + list.values.map(text).joined(separator: ", ") + "]"
        case .kvlistValue(let map):
            "[" + map.values.map { "\($0.key): \(text($0.value))" }.joined(separator: ", ") + "]"
        case nil: ""
        }
    }

    /// Cut to `maxValueBytes` at a character, NULs replaced (`FieldSanitizer`'s rule for what is indexed).
    private static func cut(_ text: String) -> String { sanitizer.sanitize(text) }
    private static let sanitizer = FieldSanitizer(maxFieldBytes: maxValueBytes)
    private static let lineSanitizer = FieldSanitizer(maxFieldBytes: maxLineBytes)
}
