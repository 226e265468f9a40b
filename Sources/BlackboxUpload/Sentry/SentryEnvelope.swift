#if Upload
    import Foundation

    /// A Sentry envelope (develop.sentry.dev/sdk/data-model/envelopes/): a JSON header line, then
    /// items, each a JSON header line with the payload's `length` and the payload. What the Sentry
    /// delivery writes into its spool, one event (with its attachments) or one kind of data per
    /// envelope, so a rate limit on one category holds back only the envelopes of that category.
    public struct SentryEnvelope: Sendable, Equatable {
        public var eventID: String?
        public var items: [Item]

        public struct Item: Sendable, Equatable {
            public var type: String
            public var payload: [UInt8]
            public var contentType: String?
            public var filename: String?
            /// Structured logs: how many records the payload holds.
            public var itemCount: Int?

            public init(
                type: String, payload: [UInt8], contentType: String? = nil, filename: String? = nil,
                itemCount: Int? = nil
            ) {
                self.type = type
                self.payload = payload
                self.contentType = contentType
                self.filename = filename
                self.itemCount = itemCount
            }

            /// The rate-limit category of an item type (Relay's `DataCategory`).
            public var category: String { Self.category(ofType: type) }

            static func category(ofType type: String) -> String {
                switch type {
                case "event": "error"
                case "attachment": "attachment"
                case "session", "sessions": "session"
                case "log": "log_item"
                case "transaction": "transaction"
                default: "default"
                }
            }
        }

        public init(eventID: String? = nil, items: [Item]) {
            self.eventID = eventID
            self.items = items
        }

        /// How every Sentry payload is written: sorted keys (stable bytes), slashes unescaped.
        static func jsonEncoder() -> JSONEncoder {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return encoder
        }

        /// The wire form.
        public func encoded() throws -> [UInt8] {
            let encoder = SentryEnvelope.jsonEncoder()
            var bytes: [UInt8] = []
            bytes += try encoder.encode(Header(eventID: eventID, sdk: .init()))
            bytes.append(UInt8(ascii: "\n"))
            for item in items {
                let header = ItemHeader(
                    type: item.type, length: item.payload.count, contentType: item.contentType,
                    filename: item.filename, itemCount: item.itemCount,
                    attachmentType: item.type == "attachment" ? "event.attachment" : nil)
                bytes += try encoder.encode(header)
                bytes.append(UInt8(ascii: "\n"))
                bytes += item.payload
                bytes.append(UInt8(ascii: "\n"))
            }
            return bytes
        }

        /// The item types of an envelope in its wire form, without copying payloads; nil when the
        /// bytes are not an envelope with explicit lengths (the only kind this side writes).
        public static func itemTypes(of bytes: [UInt8]) -> [String]? {
            guard var position = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            position += 1
            var types: [String] = []
            let decoder = JSONDecoder()
            while position < bytes.count {
                guard let end = bytes[position...].firstIndex(of: UInt8(ascii: "\n")),
                    let header = try? decoder.decode(ItemHeader.self, from: Data(bytes[position..<end])),
                    header.length >= 0, header.length <= bytes.count - end - 1
                else { return nil }
                types.append(header.type)
                position = end + 1 + header.length + 1
            }
            return types
        }

        struct Header: Codable {
            var eventID: String?
            var sdk: SDKInfo

            enum CodingKeys: String, CodingKey {
                case eventID = "event_id"
                case sdk
            }
        }

        struct SDKInfo: Codable {
            var name = SentryEvent.sdkName
            var version = SentryEvent.sdkVersion
        }

        struct ItemHeader: Codable {
            var type: String
            var length: Int
            var contentType: String?
            var filename: String?
            var itemCount: Int?
            var attachmentType: String?

            enum CodingKeys: String, CodingKey {
                case type, length
                case contentType = "content_type"
                case filename
                case itemCount = "item_count"
                case attachmentType = "attachment_type"
            }
        }
    }
#endif
