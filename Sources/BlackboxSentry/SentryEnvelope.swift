import Foundation

/// A Sentry envelope (develop.sentry.dev/sdk/data-model/envelopes/): a JSON header line, then
/// items, each a JSON header line with the payload's `length` and the payload. One type for both
/// directions: an app's delivery writes one event (with its attachments) or one kind of data per
/// envelope into its spool (`encoded()`), the collector reads what SDKs send, bounded
/// (`init(parsing:)`, in SentryEnvelope+Parsing.swift).
public struct SentryEnvelope: Sendable, Equatable {
    public var header: Header
    public var items: [Item]

    public init(header: Header, items: [Item]) {
        self.header = header
        self.items = items
    }

    public init(eventID: String? = nil, sdk: SDK? = nil, items: [Item]) {
        self.init(header: Header(eventID: eventID, sdk: sdk), items: items)
    }

    public var eventID: String? { header.eventID }
    /// The header's `dsn`, for clients that authenticate with it alone.
    public var dsn: String? { header.dsn }

    /// The envelope's header line. Decoded leniently: a field of another shape than the protocol's is
    /// left out, never an error (SDKs add fields freely).
    public struct Header: Codable, Sendable, Equatable {
        public var eventID: String?
        public var dsn: String?
        public var sdk: SDK?
        /// The dynamic sampling context (`trace`): where an envelope without an event names its release.
        public var trace: TraceContext?

        public init(eventID: String? = nil, dsn: String? = nil, sdk: SDK? = nil) {
            self.eventID = eventID
            self.dsn = dsn
            self.sdk = sdk
        }

        enum CodingKeys: String, CodingKey {
            case eventID = "event_id"
            case dsn, sdk, trace
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            eventID = try? container.decodeIfPresent(String.self, forKey: .eventID)
            dsn = try? container.decodeIfPresent(String.self, forKey: .dsn)
            sdk = try? container.decodeIfPresent(SDK.self, forKey: .sdk)
            trace = try? container.decodeIfPresent(TraceContext.self, forKey: .trace)
        }
    }

    /// The part of an envelope header's dynamic sampling context Blackbox reads and writes.
    public struct TraceContext: Codable, Sendable, Equatable {
        public var release: String?
        public var environment: String?

        public init(release: String? = nil, environment: String? = nil) {
            self.release = release
            self.environment = environment
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            release = try? container.decodeIfPresent(String.self, forKey: .release)
            environment = try? container.decodeIfPresent(String.self, forKey: .environment)
        }
    }

    public struct SDK: Codable, Sendable, Equatable {
        public var name: String
        public var version: String

        public init(name: String, version: String) {
            self.name = name
            self.version = version
        }
    }

    public struct Item: Sendable, Equatable {
        public var header: ItemHeader
        /// Read from an envelope, a slice of its bytes (no copy).
        public var payload: Data

        public init(header: ItemHeader, payload: Data) {
            self.header = header
            self.payload = payload
        }

        /// An item to send: its header's `length` is the payload's, an attachment's
        /// `attachment_type` the plain one.
        public init(
            type: String, payload: Data, contentType: String? = nil, filename: String? = nil, itemCount: Int? = nil
        ) {
            self.init(
                header: ItemHeader(
                    type: type, length: Int64(payload.count), contentType: contentType, filename: filename,
                    itemCount: itemCount, attachmentType: type == "attachment" ? "event.attachment" : nil),
                payload: payload)
        }

        /// `event`, `session`, `sessions`, `log`, `attachment`, `client_report`, ...
        public var type: String { header.type }

        /// The rate-limit category of the item's type.
        public var category: String { Self.category(ofType: type) }

        /// The rate-limit category of an item type (Relay's `DataCategory`).
        public static func category(ofType type: String) -> String {
            switch type {
            case "event": "error"
            case "attachment": "attachment"
            case "session", "sessions": "session"
            case "log": "log_item"
            case "transaction": "transaction"
            // Client reports: a limit on every other category leaves them free to say what it cost.
            case "client_report": "internal"
            default: "default"
            }
        }
    }

    /// An item's header line. `length` is optional on the wire (the payload then runs to the next
    /// newline); the other fields are decoded leniently, as the envelope's header is.
    public struct ItemHeader: Codable, Sendable, Equatable {
        public var type: String
        public var length: Int64?
        public var contentType: String?
        public var filename: String?
        /// Structured logs: how many records the payload holds.
        public var itemCount: Int?
        public var attachmentType: String?

        public init(
            type: String, length: Int64? = nil, contentType: String? = nil, filename: String? = nil,
            itemCount: Int? = nil, attachmentType: String? = nil
        ) {
            self.type = type
            self.length = length
            self.contentType = contentType
            self.filename = filename
            self.itemCount = itemCount
            self.attachmentType = attachmentType
        }

        enum CodingKeys: String, CodingKey {
            case type, length
            case contentType = "content_type"
            case filename
            case itemCount = "item_count"
            case attachmentType = "attachment_type"
        }

        /// What an item header without a usable `type` or `length` is refused for.
        struct Refusal: Error, CustomStringConvertible {
            var description: String
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard let type = try? container.decode(String.self, forKey: .type), !type.isEmpty else {
                throw Refusal(description: "no type")
            }
            self.type = type
            if container.contains(.length) {
                guard let length = Self.byteCount(container, .length) else {
                    throw Refusal(description: "length is not a byte count")
                }
                self.length = length
            }
            contentType = try? container.decodeIfPresent(String.self, forKey: .contentType)
            filename = try? container.decodeIfPresent(String.self, forKey: .filename)
            itemCount = try? container.decodeIfPresent(Int.self, forKey: .itemCount)
            attachmentType = try? container.decodeIfPresent(String.self, forKey: .attachmentType)
        }

        /// A non-negative integer a JSON number holds exactly (below 9e15), from a number or a decimal
        /// string, as SDKs write lengths.
        private static func byteCount(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) -> Int64? {
            let value: Int64?
            if let number = try? container.decode(Double.self, forKey: key) {
                value = number.isFinite && number == number.rounded() && abs(number) < 9e15 ? Int64(number) : nil
            } else {
                value = (try? container.decode(String.self, forKey: key)).flatMap { Int64($0) }
            }
            guard let value, value >= 0, value < 9_000_000_000_000_000 else { return nil }
            return value
        }
    }

    /// How every Sentry payload is written: sorted keys (stable bytes), slashes unescaped.
    public static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The wire form: every item with its `length`.
    public func encoded() throws -> [UInt8] {
        let encoder = Self.jsonEncoder()
        var bytes: [UInt8] = []
        bytes += try encoder.encode(header)
        bytes.append(UInt8(ascii: "\n"))
        for item in items {
            var header = item.header
            header.length = Int64(item.payload.count)
            bytes += try encoder.encode(header)
            bytes.append(UInt8(ascii: "\n"))
            bytes += item.payload
            bytes.append(UInt8(ascii: "\n"))
        }
        return bytes
    }

    /// The item types of an envelope in its wire form; nil when the bytes are not an envelope.
    public static func itemTypes(of bytes: [UInt8]) -> [String]? {
        (try? SentryEnvelope(parsing: Data(bytes)))?.items.map(\.type)
    }
}
