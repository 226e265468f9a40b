/// A log message for `FastLogger`, written as an ordinary string literal with interpolations:
/// `log.info("request id=\(id) user=\(name) took \(ms) ms")`.
///
/// Why it is fast: nothing is formatted on the caller's thread. Literal text and interpolated strings
/// are copied as bytes; integers, floating point values and booleans are stored in binary; the writer
/// thread renders them. The encoded message lives in a fixed inline buffer on the caller's stack (no
/// allocation). A message that does not fit is cut at a character boundary and the line says how many
/// bytes were cut. Values of other types go through `String(describing:)`, which costs a `String`.
public struct FastLogMessage: ExpressibleByStringInterpolation, ExpressibleByStringLiteral, Sendable {
    public typealias StringLiteralType = String

    @usableFromInline
    var segments: SegmentBuffer

    @inlinable
    public init(stringLiteral value: String) {
        segments = SegmentBuffer()
        segments.appendText(value)
    }

    @inlinable
    public init(stringInterpolation: StringInterpolation) {
        segments = stringInterpolation.segments
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        @usableFromInline
        var segments = SegmentBuffer()

        @inlinable
        public init(literalCapacity: Int, interpolationCount: Int) {}

        @inlinable
        public mutating func appendLiteral(_ literal: String) { segments.appendText(literal) }

        @inlinable
        public mutating func appendInterpolation(_ value: String) { segments.appendText(value) }

        @inlinable
        public mutating func appendInterpolation(_ value: Substring) { segments.appendText(String(value)) }

        @inlinable
        public mutating func appendInterpolation<T: BinaryInteger>(_ value: T) {
            if let signed = Int64(exactly: value) {
                segments.appendFixed(tag: .signed, bits: UInt64(bitPattern: signed))
            } else {
                segments.appendFixed(tag: .unsigned, bits: UInt64(truncatingIfNeeded: value))
            }
        }

        @inlinable
        public mutating func appendInterpolation(_ value: Double) {
            segments.appendFixed(tag: .double, bits: value.bitPattern)
        }

        @inlinable
        public mutating func appendInterpolation(_ value: Float) {
            segments.appendFixed(tag: .double, bits: Double(value).bitPattern)
        }

        @inlinable
        public mutating func appendInterpolation(_ value: Bool) {
            segments.appendFixed(tag: .bool, bits: value ? 1 : 0)
        }

        @inlinable
        public mutating func appendInterpolation<T>(_ value: T) {
            segments.appendText(String(describing: value))
        }
    }
}

/// The binary form of a `FastLogMessage`: a sequence of tagged segments (see docs/journal.md).
@frozen
@usableFromInline
struct SegmentBuffer: Sendable {
    @usableFromInline
    enum Tag: UInt8 {
        /// u16 length + UTF-8 bytes
        case text = 1
        /// 8 bytes each
        case signed = 2
        case unsigned = 3
        case double = 4
        case bool = 5
        /// u32: bytes cut because the message did not fit (always last)
        case truncated = 6
    }

    @usableFromInline
    static let capacity = 240

    @usableFromInline
    var storage = InlineArray<240, UInt8>(repeating: 0)
    @usableFromInline
    var count = 0
    /// Bytes of the message that did not fit.
    @usableFromInline
    var cut = 0

    @inlinable
    init() {}

    /// The size of the encoded message, including the truncation marker when something was cut.
    @inlinable
    var encodedCount: Int { cut > 0 ? count + 5 : count }

    @inlinable
    mutating func appendText(_ text: String) {
        if let done = text.utf8.withContiguousStorageIfAvailable({ appendText(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        var copy = text
        copy.withUTF8 { appendText(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    mutating func appendText(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        var fitting = min(bytes.count, Self.capacity - count - 3)
        guard fitting > 0 else {
            cut += bytes.count
            return
        }
        if fitting < bytes.count {
            // Never cut a UTF-8 sequence in half: step back over continuation bytes.
            while fitting > 0 && bytes[fitting] & 0xC0 == 0x80 { fitting -= 1 }
            cut += bytes.count - fitting
        }
        let offset = count
        withUnsafeMutableBytes(of: &storage) { raw in
            raw[offset] = Tag.text.rawValue
            raw.storeBytes(of: UInt16(fitting), toByteOffset: offset + 1, as: UInt16.self)
            if fitting > 0, let source = bytes.baseAddress {
                copyBytes(to: raw.baseAddress! + offset + 3, from: source, count: fitting)
            }
        }
        count += 3 + fitting
    }

    @inlinable
    mutating func appendFixed(tag: Tag, bits: UInt64) {
        let size = tag == .bool ? 2 : 9
        guard count + size <= Self.capacity else {
            cut += size
            return
        }
        let offset = count
        withUnsafeMutableBytes(of: &storage) { raw in
            raw[offset] = tag.rawValue
            if tag == .bool {
                raw[offset + 1] = UInt8(truncatingIfNeeded: bits)
            } else {
                raw.storeBytes(of: bits, toByteOffset: offset + 1, as: UInt64.self)
            }
        }
        count += size
    }

    /// Copies the encoded message, marker included, to `destination` (`encodedCount` bytes).
    @inlinable
    func copy(to destination: UnsafeMutableRawPointer) {
        withUnsafeBytes(of: storage) { raw in
            destination.copyMemory(from: raw.baseAddress!, byteCount: count)
        }
        if cut > 0 {
            destination.storeBytes(of: Tag.truncated.rawValue, toByteOffset: count, as: UInt8.self)
            destination.storeBytes(of: UInt32(clamping: cut), toByteOffset: count + 1, as: UInt32.self)
        }
    }
}
