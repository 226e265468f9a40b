import BlackboxFormat
import BlackboxOTLP
import Foundation
import Testing

@testable import BlackboxCollector

/// The one model of OTLP's logs (`BlackboxOTLP`) read from both encodings, and records as log lines.
@Suite("OTLP logs: both encodings into one model, records as lines")
struct OTLPLogLinesTests {
    static let traceHex = "5b8efff798038103d269b633813fc60c"
    static let spanHex = "eee19b7ec3c1b174"

    /// OTLP's JSON example, with its ids in hex as the specification writes them.
    static func json(traceID: String = traceHex, spanID: String = spanHex, extra: String = "") -> Data {
        Data(
            """
            {"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"checkout"}},
              {"key":"host.name","value":{"stringValue":"web-7"}}]},
              "scopeLogs":[{"scope":{"name":"payments","version":"1.0"},"unknownField":{"a":1},
              "logRecords":[{"timeUnixNano":"1764576000120000000","observedTimeUnixNano":"1764576000130000000",
                "severityNumber":17,"severityText":"Error","traceId":"\(traceID)","spanId":"\(spanID)",
                "body":{"stringValue":"payment refused"},
                "attributes":[{"key":"order","value":{"intValue":"42"}},
                  {"key":"retry","value":{"boolValue":true}},
                  {"key":"tags","value":{"arrayValue":{"values":[{"stringValue":"eu"},{"doubleValue":1.5}]}}},
                  {"key":"card","value":{"kvlistValue":{"values":[{"key":"brand","value":{"stringValue":"visa"}}]}}}]}
                \(extra)]}]}]}
            """.utf8)
    }

    @Test("JSON ids in hex (OTLP's JSON) and in base64 (protobuf's JSON mapping, swift-otel) are one id")
    func idsInBothSpellings() throws {
        let hex = try OTLPLogsRequest(otlp: Self.json(), encoding: .json)
        let record = try #require(hex.resourceLogs.first?.scopeLogs.first?.logRecords.first)
        #expect(lowercaseHex(record.traceID) == Self.traceHex && lowercaseHex(record.spanID) == Self.spanHex)
        // The same request as SwiftProtobuf writes JSON: ids in base64.
        let base64 = try String(decoding: hex.encoded(.json), as: UTF8.self)
        #expect(base64.contains(record.traceID.base64EncodedString()) && !base64.contains(Self.traceHex))
        let again = try OTLPLogsRequest(otlp: Data(base64.utf8), encoding: .json)
        #expect(again == hex)
        // And protobuf, both ways.
        #expect(try OTLPLogsRequest(otlp: hex.encoded(.protobuf), encoding: .protobuf) == hex)
        // Upper-case hex too.
        let upper = try OTLPLogsRequest(otlp: Self.json(traceID: Self.traceHex.uppercased()), encoding: .json)
        #expect(upper.resourceLogs.first?.scopeLogs.first?.logRecords.first?.traceID == record.traceID)
    }

    @Test("a record as a line: time, level, scope as label, body, ids, service, attributes")
    func line() throws {
        let request = try OTLPLogsRequest(otlp: Self.json(), encoding: .json)
        let rendered = try OTLPLogLines.lines(of: request)
        #expect(rendered.rejected == 0 && rendered.reason == nil)
        #expect(
            rendered.lines == [
                "2025-12-01T08:00:00.120Z ERROR payments: payment refused trace_id=\(Self.traceHex) span_id=\(Self.spanHex) service.name=checkout order=42 retry=true tags=[eu, 1.5] card=[brand: visa]"
            ])
        let parsed = try #require(LogLine(parsing: rendered.lines[0]))
        #expect(parsed.level == "error" && parsed.label == "payments")
    }

    @Test("severity: the number's four steps per level, else the text, else info")
    func severity() {
        func level(_ number: Int, _ text: String = "") -> String {
            var record = OTLPLogRecord()
            record.severityNumber = .init(rawValue: number) ?? .unspecified
            record.severityText = text
            return OTLPLogLines.level(record)
        }
        #expect(
            [1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24].map { level($0) } == [
                "trace", "trace", "debug", "debug", "info", "info", "warn", "warn", "error", "error", "crit", "crit",
            ])
        #expect(level(0, "WARNING") == "warn" && level(0, "fatal") == "crit" && level(0, "err") == "error")
        #expect(level(0) == "info" && level(0, "whatever") == "info")
    }

    @Test("records refused: ids of the wrong length, too large, not a record, past the limit; the reason counts each")
    func refusals() throws {
        let extra =
            #",{"body":{"stringValue":"short id"},"traceId":"0102030405"}"#
            + #",{"body":{"stringValue":"bad span"},"spanId":"AQID"}"#
            + #",{"body":{"stringValue":"\#(String(repeating: "x", count: OTLPLogLines.maxRecordBytes))"}}"#
            + #",{"body":{"stringValue":"no ids at all"}}"#
            + #",{"body":{"stringValue":"one too many"}}"#
        let request = try OTLPLogsRequest(otlp: Self.json(extra: extra), encoding: .json)
        let rendered = try OTLPLogLines.lines(of: request, limit: 2)
        #expect(rendered.lines.count == 2 && rendered.rejected == 4)
        #expect(rendered.lines[1].hasSuffix("INFO  payments: no ids at all service.name=checkout"), "\(rendered.lines)")
        #expect(
            rendered.reason
                == "1 record with a trace_id that is not 16 bytes; 1 record with a span_id that is not 8 bytes; 1 record larger than 128 KiB; 1 record past the 2 one request may carry"
        )
        #expect(try OTLPLogLines.lines(of: request).lines.count == 3)
    }

    /// `ExportLogsServiceRequest { resource_logs { resource {…} scope_logs { log_records {…} } } }`
    /// written by hand, for wire forms no encoder writes.
    static func field(_ number: UInt8, _ inner: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [number << 3 | 2]
        var length = inner.count
        while length >= 0x80 {
            out.append(UInt8(length & 0x7F) | 0x80)
            length >>= 7
        }
        out.append(UInt8(length))
        return out + inner
    }

    @Test("the walk over the wire form: the resource after its scopes, a broken record, a broken request")
    func wireForm() throws {
        let body = Self.field(5, Self.field(1, Array("hello".utf8)))
        let record = Self.field(2, body)
        let service = Self.field(
            1, Self.field(1, Array("service.name".utf8)) + Self.field(2, Self.field(1, Array("late".utf8))))
        // resource_logs { scope_logs { records } resource { service.name=late } }: fields in any order.
        let lateResource = Self.field(1, Self.field(2, record + [0x12, 0x02, 0x28, 0xFF]) + Self.field(1, service))
        let rendered = try OTLPLogLines.lines(ofProtobuf: Data(lateResource))
        #expect(
            rendered.lines.count == 1 && rendered.lines[0].hasSuffix("INFO  late: hello service.name=late"),
            "\(rendered)")
        #expect(rendered.rejected == 1 && rendered.reason == "1 record not decodable as a log record")
        // The census reads sizes without decoding: the two records (one broken), the resource.
        let census = try OTLPLogRecords(protobuf: Data(lateResource), maxPartBytes: 1 << 10).census()
        #expect(census == .init(records: 2, largestResource: service.count, largestScope: 0, largestRecord: body.count))
        // Cut short, a wire type 3 group, a varint of 11 bytes: the request is refused.
        for broken in [Array(lateResource.dropLast(3)), [0x0B, 0x00], [0x08] + Array(repeating: 0xFF, count: 11)] {
            #expect(throws: OTLPDecodingError.self) { try OTLPLogLines.lines(ofProtobuf: Data(broken)) }
        }
        // An empty request is no records.
        #expect(try OTLPLogLines.lines(ofProtobuf: Data()) == .init())
    }

    @Test("hostile input: nesting past the limit, a body that is no request, values cut, NULs replaced")
    func hostile() throws {
        var value = OTLPAnyValue()
        value.stringValue = "leaf"
        for _ in 0..<40 {
            var list = OTLPAnyValue()
            list.arrayValue.values = [value]
            value = list
        }
        var record = OTLPLogRecord()
        record.body = value
        var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
        scope.logRecords = [record]
        var resource = Opentelemetry_Proto_Logs_V1_ResourceLogs()
        resource.scopeLogs = [scope]
        var request = OTLPLogsRequest()
        request.resourceLogs = [resource]
        for encoding in [OTLPEncoding.protobuf, .json] {
            #expect(throws: OTLPDecodingError.self) {
                try OTLPLogsRequest(otlp: request.encoded(encoding), encoding: encoding)
            }
        }
        #expect(throws: OTLPDecodingError.self) {
            try OTLPLogsRequest(otlp: Data("{\"resourceLogs\":7}".utf8), encoding: .json)
        }
        #expect(throws: OTLPDecodingError.self) {
            try OTLPLogsRequest(otlp: Data([0x0A, 0xFF, 0x01]), encoding: .protobuf)
        }

        var long = OTLPLogRecord()
        long.body.stringValue = String(repeating: "x", count: 10_000) + "\0"
        long.attributes = (0..<40).map { index in
            var attribute = OTLPKeyValue()
            attribute.key = "k\(index)"
            attribute.value.stringValue = "v\0"
            return attribute
        }
        let line = OTLPLogLines.line(long, label: "l", service: [])
        #expect(line.contains(FieldSanitizer.cutMarker) && !line.contains("\0") && line.contains("k31=v\u{FFFD}"))
        #expect(!line.contains("k32="), "at most \(OTLPLogLines.maxAttributes) attributes")
        #expect(line.utf8.count < OTLPLogLines.maxValueBytes + 40 * 8 + 64)
    }

    @Test("a line as a record and back: the two mappings are each other's inverse on Blackbox's lines")
    func roundTrip() throws {
        let lines = [
            "2026-12-01T08:00:00.120Z ERROR payments: payment refused trace_id=\(Self.traceHex) span_id=\(Self.spanHex)",
            "2026-12-01T08:00:00.121Z NOTE  payments: warming up",
            "2026-12-01T08:00:00.122Z CRIT  db: out of connections pool=main",
            "2026-12-01T08:00:00.123Z TRACE net: read 17 bytes",
        ]
        for text in lines {
            let (label, record) = OTLPLogLines.record(ofLine: text, fallbackTime: Date())
            #expect(OTLPLogLines.line(record, label: label ?? "", service: []) == text)
        }
        // Ids only when they are ids: a short or zero one stays in the body.
        let zero = "2026-12-01T08:00:00.000Z INFO  x: a trace_id=\(String(repeating: "0", count: 32)) span_id=12"
        let (_, kept) = OTLPLogLines.record(ofLine: zero, fallbackTime: Date())
        #expect(kept.traceID.isEmpty && kept.spanID.isEmpty && OTLPLogLines.text(kept.body).hasSuffix("span_id=12"))
        // Another shape: the body as it is, at the fallback time, no severity.
        let when = Date(timeIntervalSince1970: 1_796_112_000)
        let (none, raw) = OTLPLogLines.record(ofLine: "{\"msg\":\"json\"}", fallbackTime: when)
        #expect(none == nil && OTLPLogLines.text(raw.body) == "{\"msg\":\"json\"}")
        #expect(raw.timeUnixNano == 1_796_112_000_000_000_000 && raw.severityNumber == .unspecified)
    }

    @Test("Content-Type names the encoding")
    func contentTypes() {
        #expect(OTLPEncoding(contentType: "application/x-protobuf") == .protobuf)
        #expect(OTLPEncoding(contentType: "application/json; charset=utf-8") == .json)
        #expect(OTLPEncoding(contentType: "text/plain") == nil && OTLPEncoding(contentType: nil) == nil)
    }
}
