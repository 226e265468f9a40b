import BlackboxFormat
import Foundation
import SwiftProtobuf

/// OTLP/HTTP's logs request and answer, in the one model generated from `collector/proto` (both
/// directions: the receiver reads it, the forwarder writes it).
package typealias OTLPLogsRequest = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceRequest
package typealias OTLPLogsResponse = Opentelemetry_Proto_Collector_Logs_V1_ExportLogsServiceResponse
package typealias OTLPLogRecord = Opentelemetry_Proto_Logs_V1_LogRecord
package typealias OTLPSeverity = Opentelemetry_Proto_Logs_V1_SeverityNumber
package typealias OTLPAnyValue = Opentelemetry_Proto_Common_V1_AnyValue
package typealias OTLPKeyValue = Opentelemetry_Proto_Common_V1_KeyValue
/// google.rpc.Status: what OTLP/HTTP answers a refused request with, in the request's encoding.
package typealias OTLPStatus = Google_Rpc_Status

/// The two encodings OTLP/HTTP has, named by the request's `Content-Type`.
package enum OTLPEncoding: Sendable, Equatable {
    case protobuf, json

    /// `application/x-protobuf` or `application/json` (parameters such as `charset` ignored).
    package init?(contentType: String?) {
        let type = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        switch type {
        case "application/x-protobuf", "application/protobuf": self = .protobuf
        case "application/json": self = .json
        default: return nil
        }
    }

    package var contentType: String {
        switch self {
        case .protobuf: "application/x-protobuf"
        case .json: "application/json"
        }
    }
}

/// Why a body is not an OTLP logs request.
package struct OTLPDecodingError: Error, CustomStringConvertible {
    package let description: String
}

extension OTLPLogsRequest {
    /// Deeper nesting than this (an attribute's list in a list in a list…) is refused: each level is
    /// a recursive call and a heap allocation, and no exporter sends more than a few.
    package static let maxNestingDepth = 24

    /// How every part of a request is decoded from protobuf: nesting bounded, unknown fields dropped.
    static let binaryOptions: BinaryDecodingOptions = {
        var options = BinaryDecodingOptions()
        options.messageDepthLimit = maxNestingDepth
        options.discardUnknownFields = true
        return options
    }()

    /// Reads a body in either encoding. Unknown fields are ignored (OTLP's rule for receivers).
    ///
    /// OTLP's JSON writes trace and span ids as hex, where protobuf's JSON mapping (and swift-otel,
    /// which encodes with it) writes base64. Hex digits are base64 letters, so the JSON decoder
    /// reads a 32-digit trace id as 24 bytes and a 16-digit span id as 12: those lengths, which no
    /// valid id has, are turned back into the digits and read as hex.
    package init(otlp bytes: Data, encoding: OTLPEncoding) throws(OTLPDecodingError) {
        do {
            switch encoding {
            case .protobuf:
                self = try OTLPLogsRequest(serializedBytes: bytes, options: Self.binaryOptions)
            case .json:
                var options = JSONDecodingOptions()
                options.messageDepthLimit = Self.maxNestingDepth
                options.ignoreUnknownFields = true
                self = try OTLPLogsRequest(jsonUTF8Bytes: bytes, options: options)
                normalizeHexIDs()
            }
        } catch {
            throw OTLPDecodingError(description: "not an OTLP logs request in \(encoding): \(error)")
        }
    }

    private mutating func normalizeHexIDs() {
        for r in resourceLogs.indices {
            for s in resourceLogs[r].scopeLogs.indices {
                for l in resourceLogs[r].scopeLogs[s].logRecords.indices {
                    resourceLogs[r].scopeLogs[s].logRecords[l].normalizeHexIDs()
                }
            }
        }
    }

}

extension SwiftProtobuf.Message {
    /// The message in `encoding` (ids in JSON as protobuf's JSON mapping writes them, base64, which
    /// every OTLP receiver reads).
    package func encoded(_ encoding: OTLPEncoding) throws -> Data {
        switch encoding {
        case .protobuf: try serializedBytes()
        case .json: try jsonUTF8Data()
        }
    }
}

extension OTLPLogRecord {
    fileprivate mutating func normalizeHexIDs() {
        if traceID.count == 24, let id = Data(hexDigitsReadAsBase64: traceID) { traceID = id }
        if spanID.count == 12, let id = Data(hexDigitsReadAsBase64: spanID) { spanID = id }
    }
}

extension Data {
    /// The bytes whose hex digits `base64Decoded` holds as base64: the digits are recovered by
    /// encoding again (exact for lengths that are multiples of 3 bytes, as 24 and 12 are).
    fileprivate init?(hexDigitsReadAsBase64 base64Decoded: Data) {
        guard let bytes = BlackboxFormat.bytes(fromHex: base64Decoded.base64EncodedString()) else { return nil }
        self.init(bytes)
    }
}

extension OTLPKeyValue {
    /// An attribute with a text value.
    package init(_ key: String, _ text: String) {
        self.init()
        self.key = key
        value.stringValue = text
    }
}

extension OTLPLogsResponse {
    /// The answer to a request of which `rejected` records were refused, for `reason`; a full success
    /// is the empty answer.
    package init(rejected: Int, reason: String?) {
        self.init()
        if rejected > 0 {
            partialSuccess.rejectedLogRecords = Int64(rejected)
            partialSuccess.errorMessage = reason ?? ""
        }
    }
}
