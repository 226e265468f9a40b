import Foundation

/// The fields of one protobuf message, read off its wire form without decoding them: each field's
/// number and, for a length-delimited one, where its bytes are. Hand-written because SwiftProtobuf
/// decodes a message whole, and an OTLP request's decoded model takes up to 86 times its bytes
/// (a request of empty records, measured); walking the request's outer levels here lets each record
/// be decoded, bounded and dropped on its own (`OTLPLogRecords`).
struct ProtobufFields: Sequence, IteratorProtocol {
    struct Field {
        var number: UInt64
        /// A length-delimited field's bytes; nil for numbers (varints and fixed widths).
        var bytes: Range<Data.Index>?
    }

    struct Malformed: Error {
        let reason: String
    }

    private let data: Data
    private var index: Data.Index
    private let end: Data.Index
    /// Set when the wire form is broken; iteration has stopped.
    private(set) var failure: Malformed?

    init(_ data: Data, in range: Range<Data.Index>? = nil) {
        self.data = data
        index = range?.lowerBound ?? data.startIndex
        end = range?.upperBound ?? data.endIndex
    }

    mutating func next() -> Field? {
        guard index < end, failure == nil else { return nil }
        do throws(Malformed) {
            let key = try varint()
            let number = key >> 3
            guard number > 0 else { throw Malformed(reason: "field number 0") }
            switch key & 7 {
            case 0:
                _ = try varint()
                return Field(number: number, bytes: nil)
            case 1:
                try skip(8)
                return Field(number: number, bytes: nil)
            case 5:
                try skip(4)
                return Field(number: number, bytes: nil)
            case 2:
                let length = try varint()
                guard length <= UInt64(end - index) else { throw Malformed(reason: "a field runs past its message") }
                let start = index
                index += Int(length)
                return Field(number: number, bytes: start..<index)
            default:
                // Groups (3, 4) are proto2's and never in OTLP; 6 and 7 are no wire type.
                throw Malformed(reason: "wire type \(key & 7)")
            }
        } catch {
            failure = error
            return nil
        }
    }

    private mutating func varint() throws(Malformed) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < end, shift < 64 {
            let byte = data[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Malformed(reason: "a varint is cut short or longer than 10 bytes")
    }

    private mutating func skip(_ count: Int) throws(Malformed) {
        guard end - index >= count else { throw Malformed(reason: "a fixed-width field is cut short") }
        index += count
    }
}
