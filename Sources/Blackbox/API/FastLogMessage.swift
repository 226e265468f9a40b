/// A log message for `FastLogger`, written as an ordinary string literal with interpolations:
/// `log.info("request id=\(id) user=\(name) took \(ms) ms")`.
///
/// Why it is fast: nothing is formatted on the caller's thread. The literal parts are `StaticString`s
/// (a pointer and a length, no `String`); they, and interpolated strings, are copied as bytes;
/// integers, floating point values and booleans are stored in binary; the writer thread renders them.
/// The encoded message lives in a fixed inline buffer on the caller's stack (no allocation). A message
/// that does not fit is cut at a character boundary and the line says how many bytes were cut. Values
/// of other types go through `String(describing:)`, which costs a `String`.
public struct FastLogMessage: ExpressibleByStringInterpolation, ExpressibleByStringLiteral, Sendable {
    public typealias StringLiteralType = StaticString

    @usableFromInline
    var segments: SegmentBuffer

    @inlinable
    public init(stringLiteral value: StaticString) {
        segments = SegmentBuffer()
        segments.appendText(value)
    }

    @inlinable
    public init(stringInterpolation: StringInterpolation) {
        segments = stringInterpolation.segments
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public typealias StringLiteralType = StaticString

        @usableFromInline
        var segments = SegmentBuffer()

        @inlinable
        public init(literalCapacity: Int, interpolationCount: Int) {}

        @inlinable
        public mutating func appendLiteral(_ literal: StaticString) { segments.appendText(literal) }

        @inlinable
        public mutating func appendInterpolation(_ value: String) { segments.appendText(value) }

        @inlinable
        public mutating func appendInterpolation(_ value: Substring) { segments.appendText(String(value)) }

        @inlinable
        public mutating func appendInterpolation(_ value: StaticString) { segments.appendText(value) }

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
        /// 1 byte
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
    /// Where the last segment starts when it is text: adjacent text (a literal, an interpolated
    /// string, the next literal) is merged into one segment, so the writer renders fewer pieces.
    @usableFromInline
    var openText = -1

    @inlinable
    init() {}

    /// The size of the encoded message, including the truncation marker when something was cut.
    @inlinable
    var encodedCount: Int { cut > 0 ? count + 5 : count }

    @inlinable
    mutating func appendText(_ text: StaticString) {
        appendText(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inlinable
    mutating func appendText(_ text: String) {
        withUTF8Bytes(text) { appendText(UnsafeRawBufferPointer($0)) }
    }

    @inlinable
    @inline(__always)
    mutating func appendText(_ bytes: UnsafeRawBufferPointer) {
        let length = bytes.count
        guard length > 0, let source = bytes.baseAddress else { return }
        let offset = count
        let open = openText
        if open >= 0 {
            // Extend the text segment that ends here.
            guard offset + length <= Self.capacity else { return appendTextCut(bytes) }
            withUnsafeMutableBytes(of: &storage) { raw in
                let base = raw.baseAddress.unsafelyUnwrapped
                let merged =
                    base.loadUnaligned(fromByteOffset: open + 1, as: UInt16.self) &+ UInt16(truncatingIfNeeded: length)
                base.storeBytes(of: merged, toByteOffset: open + 1, as: UInt16.self)
                copyBytes(to: base + offset, from: source, count: length)
            }
            count = offset + length
            return
        }
        guard offset + 3 + length <= Self.capacity else { return appendTextCut(bytes) }
        withUnsafeMutableBytes(of: &storage) { raw in
            let base = raw.baseAddress.unsafelyUnwrapped
            base.storeBytes(of: Tag.text.rawValue, toByteOffset: offset, as: UInt8.self)
            base.storeBytes(of: UInt16(truncatingIfNeeded: length), toByteOffset: offset + 1, as: UInt16.self)
            copyBytes(to: base + offset + 3, from: source, count: length)
        }
        openText = offset
        count = offset + 3 + length
    }

    /// The rare case: the text does not fit whole. Keeps what fits, never cutting a UTF-8 sequence.
    @usableFromInline
    @inline(never)
    mutating func appendTextCut(_ bytes: UnsafeRawBufferPointer) {
        var fitting = max(0, Self.capacity - count - (openText >= 0 ? 0 : 3))
        while fitting > 0 && bytes[fitting] & 0xC0 == 0x80 { fitting -= 1 }
        cut += bytes.count - fitting
        guard fitting > 0 else { return }
        appendText(UnsafeRawBufferPointer(rebasing: bytes[..<fitting]))
    }

    @inlinable
    @inline(__always)
    mutating func appendFixed(tag: Tag, bits: UInt64) {
        let size = tag == .bool ? 2 : 9
        let offset = count
        guard offset + size <= Self.capacity else {
            cut += size
            return
        }
        openText = -1
        withUnsafeMutableBytes(of: &storage) { raw in
            let base = raw.baseAddress.unsafelyUnwrapped
            base.storeBytes(of: tag.rawValue, toByteOffset: offset, as: UInt8.self)
            if tag == .bool {
                base.storeBytes(of: UInt8(truncatingIfNeeded: bits), toByteOffset: offset + 1, as: UInt8.self)
            } else {
                base.storeBytes(of: bits, toByteOffset: offset + 1, as: UInt64.self)
            }
        }
        count = offset + size
    }

    /// Copies the encoded message, marker included, to `destination` (`encodedCount` bytes).
    /// Mutating only to get at the storage in place rather than through a copy.
    @inlinable
    mutating func copy(to destination: UnsafeMutableRawPointer) {
        let count = self.count
        withUnsafeMutableBytes(of: &storage) { raw in
            destination.copyMemory(from: raw.baseAddress.unsafelyUnwrapped, byteCount: count)
        }
        if cut > 0 {
            destination.storeBytes(of: Tag.truncated.rawValue, toByteOffset: count, as: UInt8.self)
            destination.storeBytes(of: UInt32(clamping: cut), toByteOffset: count + 1, as: UInt32.self)
        }
    }
}
