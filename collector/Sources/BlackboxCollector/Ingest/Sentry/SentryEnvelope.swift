import Foundation

/// A Sentry envelope, split without trusting it: a header line of JSON, then items, each a header
/// line of JSON and a payload of `length` bytes, or up to the next newline when the header gives no
/// length (develop.sentry.dev, "Envelopes"). Payloads stay byte ranges of the body until an item is
/// read; only headers are decoded here. Hand-written because no Swift library parses envelopes (the
/// format is a few lines; the bounds are what matter).
struct SentryEnvelope: Sendable {
    struct Item: Sendable {
        /// `event`, `session`, `sessions`, `log`, `attachment`, `client_report`, ...
        var type: String
        var header: SentryJSON
        /// Where the payload lies in the envelope's bytes.
        var payload: Range<Int>
    }

    enum Failure: Error, Equatable, CustomStringConvertible {
        case missingHeader
        case invalidHeader(String)
        case invalidItemHeader(item: Int, String)
        case lengthBeyondBody(item: Int, length: Int64)
        case missingNewline(item: Int)
        case tooManyItems(limit: Int)
        case headerTooLong(limit: Int)

        var description: String {
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
    static let maxItems = 1_000
    /// Header lines are small JSON objects; a longer one is not an honest envelope.
    static let maxHeaderBytes = 64 << 10

    var header: SentryJSON
    var items: [Item]

    init(_ bytes: Data) throws(Failure) {
        let start = bytes.startIndex
        var offset = start
        func line() -> Range<Int>? {
            guard offset < bytes.endIndex else { return nil }
            let end = bytes[offset...].firstIndex(of: 0x0A) ?? bytes.endIndex
            defer { offset = min(end + 1, bytes.endIndex) }
            return offset..<end
        }
        func headerObject(_ range: Range<Int>) throws -> SentryJSON {
            guard range.count <= Self.maxHeaderBytes else { throw Failure.headerTooLong(limit: Self.maxHeaderBytes) }
            let value = try SentryJSON.parse(bytes[range])
            guard value.object != nil else { throw Failure.invalidHeader("not an object") }
            return value
        }
        guard let first = line(), !first.isEmpty else { throw .missingHeader }
        do {
            header = try headerObject(first)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .invalidHeader("\(error)")
        }
        items = []
        while let range = line() {
            // Blank lines between items are tolerated, as Relay does.
            if range.isEmpty { continue }
            let number = items.count
            guard number < Self.maxItems else { throw .tooManyItems(limit: Self.maxItems) }
            let itemHeader: SentryJSON
            do {
                itemHeader = try headerObject(range)
            } catch {
                throw .invalidItemHeader(item: number, "\(error)")
            }
            guard let type = itemHeader["type"]?.string, !type.isEmpty else {
                throw .invalidItemHeader(item: number, "no type")
            }
            let payload: Range<Int>
            if let declared = itemHeader["length"] {
                // Compared, never added first: a length near Int64.max must not overflow.
                guard let length = declared.integer, length >= 0 else {
                    throw .invalidItemHeader(item: number, "length is not a byte count")
                }
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
            items.append(
                Item(
                    type: type, header: itemHeader, payload: (payload.lowerBound - start)..<(payload.upperBound - start)
                ))
        }
    }

    /// The envelope header's `dsn`, for clients that authenticate with it alone.
    var dsn: String? { header["dsn"]?.string }
    var eventID: String? { header["event_id"]?.string }
}
