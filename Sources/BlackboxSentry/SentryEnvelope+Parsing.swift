import Foundation

/// Reading an envelope without trusting it: a header line of JSON, then items, each a header line of
/// JSON and a payload of `length` bytes, or up to the next newline when the header gives no length
/// (develop.sentry.dev, "Envelopes"). Payloads stay slices of the body; only headers are decoded
/// here. Hand-written because no Swift library parses envelopes (the format is a few lines; the
/// bounds are what matter).
extension SentryEnvelope {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case missingHeader
        case invalidHeader(String)
        case invalidItemHeader(item: Int, String)
        case lengthBeyondBody(item: Int, length: Int64)
        case missingNewline(item: Int)
        case tooManyItems(limit: Int)
        case headerTooLong(limit: Int)

        public var description: String {
            switch self {
            case .missingHeader: "the envelope has no header line"
            case .invalidHeader(let why): "the envelope header is not a JSON object: \(why)"
            case .invalidItemHeader(let item, let why): "item \(item)'s header is not a JSON object with a type: \(why)"
            case .lengthBeyondBody(let item, let length):
                "item \(item) says its payload is \(length) bytes, more than the envelope holds"
            case .missingNewline(let item): "item \(item)'s payload is not followed by a newline"
            case .tooManyItems(let limit): "more than \(limit) items in one envelope"
            case .headerTooLong(let limit): "a header line longer than \(limit) bytes"
            }
        }
    }

    /// At most this many items: SDKs send one event and its attachments, or a few dozen sessions.
    public static let maxItems = 1_000
    /// Header lines are small JSON objects; a longer one is not an honest envelope.
    public static let maxHeaderBytes = 64 << 10

    public init(parsing bytes: Data) throws(Failure) {
        var offset = bytes.startIndex
        func line() -> Range<Int>? {
            guard offset < bytes.endIndex else { return nil }
            let end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.endIndex
            defer { offset = min(end + 1, bytes.endIndex) }
            return offset..<end
        }
        guard let first = line(), !first.isEmpty else { throw .missingHeader }
        let header = try Self.decodeHeader(bytes[first], as: Header.self) { .invalidHeader($0) }
        var items: [Item] = []
        while let range = line() {
            // Blank lines between items are tolerated, as Relay does.
            if range.isEmpty { continue }
            let number = items.count
            guard number < Self.maxItems else { throw .tooManyItems(limit: Self.maxItems) }
            let itemHeader = try Self.decodeHeader(bytes[range], as: ItemHeader.self) {
                .invalidItemHeader(item: number, $0)
            }
            let payload: Range<Int>
            if let length = itemHeader.length {
                // Compared, never added first: a length near Int64.max must not overflow.
                guard length <= Int64(bytes.endIndex - offset) else {
                    throw .lengthBeyondBody(item: number, length: length)
                }
                payload = offset..<(offset + Int(length))
                offset = payload.upperBound
                if offset < bytes.endIndex {
                    guard bytes[offset] == 0x0A else { throw .missingNewline(item: number) }
                    offset += 1
                }
            } else {
                payload = line() ?? offset..<offset
            }
            items.append(Item(header: itemHeader, payload: bytes[payload]))
        }
        self.init(header: header, items: items)
    }

    /// The header line of an envelope alone (`dsn`, `event_id`), as the collector reads it before
    /// the body is in; nil when it is not one.
    public static func header(ofFirstLine line: Data) -> Header? {
        try? decodeHeader(line, as: Header.self) { .invalidHeader($0) }
    }

    private static func decodeHeader<Value: Decodable>(
        _ line: Data, as type: Value.Type, failure: (String) -> Failure
    ) throws(Failure) -> Value {
        guard line.count <= maxHeaderBytes else { throw .headerTooLong(limit: maxHeaderBytes) }
        do {
            return try JSONDecoder().decode(Value.self, from: line)
        } catch let refusal as ItemHeader.Refusal {
            throw failure(refusal.description)
        } catch {
            throw failure("\(error)")
        }
    }
}
