/// A record as one line of the Elastic Common Schema's logging form (the ecs-logging specification:
/// `@timestamp`, `log.level` and `message` first, dotted names at the top level):
///
/// ```
/// {"@timestamp":"2026-11-21T22:39:39.123Z","log.level":"info","message":"…","ecs.version":"1.6.0",
///  "log.logger":"net","trace.id":"…","span.id":"…","error.message":"…",
///  "log.origin.file.name":"App/main.swift","log.origin.file.line":12,"process.thread.id":7,
///  "labels":{"request_id":"r-1"}}
/// ```
///
/// The metadata keys `trace_id`, `span_id` and `error` (swift-log's `error:`) become ECS fields; every
/// other key is a label, with `.` made `_` (ECS labels are flat keywords: Elasticsearch would read a
/// dot as an object). Escaping as in JSON Lines.
extension LineFormatter {
    /// The ECS version the fields above conform to (all of them exist since ECS 1.x).
    static let ecsVersion: StaticString = "1.6.0"

    mutating func appendECS(_ record: RecordView, to out: inout OutputBuffer) {
        out.append(literal: "{\"@timestamp\":\"")
        timestamps.append(record.timestampNanoseconds, to: &out)
        out.append(literal: "\",\"log.level\":\"")
        out.append(string: record.level.name)
        out.append(literal: "\",\"message\":\"")
        appendMessage(record, to: &out, escape: .json)
        out.append(literal: "\",\"ecs.version\":\"")
        out.append(literal: Self.ecsVersion)
        out.append(literal: "\",\"log.logger\":\"")
        appendEscaped(record.label, to: &out, escape: .json)
        out.append(UInt8(ascii: "\""))
        let metadata = record.metadata
        for (key, value) in metadata {
            guard let field = Self.ecsField(forKey: key) else { continue }
            out.append(literal: field)
            appendEscaped(value, to: &out, escape: .json)
            out.append(UInt8(ascii: "\""))
        }
        if record.file.count > 0 {
            out.append(literal: ",\"log.origin.file.name\":\"")
            appendEscaped(record.file, to: &out, escape: .json)
            out.append(literal: "\",\"log.origin.file.line\":")
            out.appendDecimal(UInt64(record.line))
        }
        out.append(literal: ",\"process.thread.id\":")
        out.appendDecimal(UInt64(record.threadID))
        var first = true
        for (key, value) in metadata where Self.ecsField(forKey: key) == nil {
            out.append(literal: first ? ",\"labels\":{\"" : ",\"")
            first = false
            appendLabelKey(key, to: &out)
            out.append(literal: "\":\"")
            appendEscaped(value, to: &out, escape: .json)
            out.append(UInt8(ascii: "\""))
        }
        if !first { out.append(UInt8(ascii: "}")) }
        out.append(literal: "}\n")
    }

    /// The opening of the ECS field a metadata key maps to, or nil for a label.
    private static func ecsField(forKey key: UnsafeRawBufferPointer) -> StaticString? {
        switch key.count {
        case 5 where key.elementsEqual("error".utf8): ",\"error.message\":\""
        case 7 where key.elementsEqual("span_id".utf8): ",\"span.id\":\""
        case 8 where key.elementsEqual("trace_id".utf8): ",\"trace.id\":\""
        default: nil
        }
    }

    private func appendLabelKey(_ key: UnsafeRawBufferPointer, to out: inout OutputBuffer) {
        guard key.contains(UInt8(ascii: ".")) else { return appendEscaped(key, to: &out, escape: .json) }
        let flat = key.map { $0 == UInt8(ascii: ".") ? UInt8(ascii: "_") : $0 }
        flat.withUnsafeBytes { appendEscaped($0, to: &out, escape: .json) }
    }
}
