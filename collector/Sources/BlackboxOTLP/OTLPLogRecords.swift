import Foundation
import SwiftProtobuf

/// The records of an OTLP logs request in protobuf, one at a time with the resource and scope they
/// belong to, each still encoded: the caller decodes those it takes (after checking their size), so
/// what a request costs in memory is its bytes and one record's model, whatever it holds. Field
/// numbers are those of `collector/proto`.
package struct OTLPLogRecords {
    package struct Context {
        package var resource = Opentelemetry_Proto_Resource_V1_Resource()
        package var scope = Opentelemetry_Proto_Common_V1_InstrumentationScope()
    }

    package struct EncodedRecord {
        package let bytes: Data

        package func decoded() throws(OTLPDecodingError) -> OTLPLogRecord {
            do {
                return try OTLPLogRecord(serializedBytes: bytes, options: OTLPLogsRequest.binaryOptions)
            } catch {
                throw OTLPDecodingError(description: "\(error)")
            }
        }
    }

    package let data: Data
    /// A resource or scope larger than this is not decoded: the request is refused.
    package let maxPartBytes: Int

    package init(protobuf data: Data, maxPartBytes: Int) {
        self.data = data
        self.maxPartBytes = maxPartBytes
    }

    /// Calls `visit` for every record in order. A request whose outer levels are broken throws
    /// (after the records before the break were visited).
    package func walk(_ visit: (Context, EncodedRecord) throws -> Void) throws {
        try fields(of: nil, number: 1) { resourceLogs in
            var context = Context()
            if let resource = try last(of: resourceLogs, number: 1) {
                context.resource = try decodePart(resource, as: Opentelemetry_Proto_Resource_V1_Resource.self)
            }
            try fields(of: resourceLogs, number: 2) { scopeLogs in
                context.scope = Opentelemetry_Proto_Common_V1_InstrumentationScope()
                if let scope = try last(of: scopeLogs, number: 1) {
                    context.scope = try decodePart(scope, as: Opentelemetry_Proto_Common_V1_InstrumentationScope.self)
                }
                try fields(of: scopeLogs, number: 2) { record in
                    try visit(context, EncodedRecord(bytes: data[record]))
                }
            }
        }
    }

    /// How many records the request holds, and the largest resource, scope and record, in bytes:
    /// what reading it will hold at most, known before anything is decoded (a walk of the outer
    /// levels' wire form only).
    package struct Census: Equatable {
        package var records = 0
        package var largestResource = 0
        package var largestScope = 0
        package var largestRecord = 0

        package init(records: Int = 0, largestResource: Int = 0, largestScope: Int = 0, largestRecord: Int = 0) {
            self.records = records
            self.largestResource = largestResource
            self.largestScope = largestScope
            self.largestRecord = largestRecord
        }
    }

    package func census() throws -> Census {
        var census = Census()
        try fields(of: nil, number: 1) { resourceLogs in
            try forEachField(of: resourceLogs) { field in
                guard let part = field.bytes else { return }
                if field.number == 1 { census.largestResource = max(census.largestResource, part.count) }
                guard field.number == 2 else { return }
                try forEachField(of: part) { field in
                    guard let part = field.bytes else { return }
                    if field.number == 1 { census.largestScope = max(census.largestScope, part.count) }
                    if field.number == 2 {
                        census.records += 1
                        census.largestRecord = max(census.largestRecord, part.count)
                    }
                }
            }
        }
        return census
    }

    /// The fields of the message at `range` (the request itself when nil), in order; a broken wire
    /// form throws once the fields before the break were handed on.
    private func forEachField(of range: Range<Data.Index>?, _ body: (ProtobufFields.Field) throws -> Void) throws {
        var fields = ProtobufFields(data, in: range)
        while let field = fields.next() { try body(field) }
        if let failure = fields.failure {
            throw OTLPDecodingError(description: "not an OTLP logs request in protobuf: \(failure.reason)")
        }
    }

    /// The length-delimited fields numbered `number` of the message at `range` (the request itself when nil).
    private func fields(of range: Range<Data.Index>?, number: UInt64, _ body: (Range<Data.Index>) throws -> Void)
        throws
    {
        try forEachField(of: range) { field in
            guard field.number == number else { return }
            guard let bytes = field.bytes else {
                throw OTLPDecodingError(description: "field \(number) is not a message")
            }
            try body(bytes)
        }
    }

    /// The last field numbered `number` (proto3's rule for a singular field sent twice is to merge;
    /// exporters send one).
    private func last(of range: Range<Data.Index>, number: UInt64) throws -> Range<Data.Index>? {
        var found: Range<Data.Index>?
        try fields(of: range, number: number) { found = $0 }
        return found
    }

    private func decodePart<Part: SwiftProtobuf.Message>(_ range: Range<Data.Index>, as type: Part.Type) throws -> Part
    {
        guard range.count <= maxPartBytes else {
            throw OTLPDecodingError(
                description: "a \(Part.protoMessageName) of \(range.count) bytes, past \(maxPartBytes)")
        }
        do {
            return try Part(serializedBytes: data[range], options: OTLPLogsRequest.binaryOptions)
        } catch {
            throw OTLPDecodingError(description: "not an OTLP logs request in protobuf: \(error)")
        }
    }
}
