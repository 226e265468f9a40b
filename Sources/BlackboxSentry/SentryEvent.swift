import Foundation

/// The part of Sentry's event payload Blackbox sends (develop.sentry.dev/sdk/data-model/event-
/// payloads/), as Codable values: nil fields are left out of the JSON, as Sentry SDKs do.
/// `SentryEvent.init(report:…)` fills it from a report; docs/sentry.md lists the mapping.
public struct SentryEvent: Codable, Sendable, Equatable {
    public var eventID: String
    /// Seconds since 1970, with fractions.
    public var timestamp: Double
    public var platform = "native"
    public var level: String
    public var logger: String?
    public var release: String?
    public var dist: String?
    public var environment: String?
    public var serverName: String?
    public var transaction: String?
    public var message: Message?
    public var exception: Values<Exception>?
    public var threads: Values<Thread>?
    public var debugMeta: DebugMeta?
    public var breadcrumbs: Values<Breadcrumb>?
    public var contexts: [String: [String: ContextValue]]?
    public var tags: [String: String]?
    public var extra: [String: String]?
    public var request: Request?
    public var sdk: SDK

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id"
        case timestamp, platform, level, logger, release, dist, environment
        case serverName = "server_name"
        case transaction, message, exception, threads
        case debugMeta = "debug_meta"
        case breadcrumbs, contexts, tags, extra, request, sdk
    }

    public struct Values<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        public var values: [Value]
    }

    public struct Message: Codable, Sendable, Equatable {
        public var formatted: String
    }

    public struct Exception: Codable, Sendable, Equatable {
        public var type: String
        public var value: String?
        public var module: String?
        public var threadID: Int32?
        public var mechanism: Mechanism
        public var stacktrace: Stacktrace?

        enum CodingKeys: String, CodingKey {
            case type, value, module
            case threadID = "thread_id"
            case mechanism, stacktrace
        }
    }

    public struct Mechanism: Codable, Sendable, Equatable {
        public var type: String
        public var handled: Bool
        public var synthetic: Bool?
        public var meta: Meta?

        public struct Meta: Codable, Sendable, Equatable {
            public var signal: Signal?
        }

        public struct Signal: Codable, Sendable, Equatable {
            public var number: Int32
            public var code: Int32?
            public var name: String
            public var codeName: String?

            enum CodingKeys: String, CodingKey {
                case number, code, name
                case codeName = "code_name"
            }
        }
    }

    public struct Stacktrace: Codable, Sendable, Equatable {
        /// Oldest first: the crashing frame is the last.
        public var frames: [Frame]
        public var registers: [String: String]?
        /// `all_but_first`: every address but the innermost one is a return address.
        public var instructionAddrAdjustment: String?

        enum CodingKeys: String, CodingKey {
            case frames, registers
            case instructionAddrAdjustment = "instruction_addr_adjustment"
        }
    }

    public struct Frame: Codable, Sendable, Equatable {
        public var instructionAddr: String?
        public var imageAddr: String?
        public var function: String?
        public var rawFunction: String?
        public var package: String?
        public var filename: String?
        public var absPath: String?
        public var lineno: Int?
        public var colno: Int?
        public var inApp: Bool?
        /// Set on a Swift async resume point: each begins the chained stack of an awaiting caller.
        public var stackStart: Bool?

        enum CodingKeys: String, CodingKey {
            case instructionAddr = "instruction_addr"
            case imageAddr = "image_addr"
            case function
            case rawFunction = "raw_function"
            case package, filename
            case absPath = "abs_path"
            case lineno, colno
            case inApp = "in_app"
            case stackStart = "stack_start"
        }
    }

    public struct Thread: Codable, Sendable, Equatable {
        public var id: Int32
        public var name: String?
        public var crashed: Bool
        public var current: Bool
        /// Left out for the crashed thread: its stack is the exception's.
        public var stacktrace: Stacktrace?
    }

    public struct DebugMeta: Codable, Sendable, Equatable {
        public var images: [Image]
    }

    public struct Image: Codable, Sendable, Equatable {
        public var type = "elf"
        public var codeID: String?
        public var debugID: String?
        public var imageAddr: String
        public var imageSize: UInt64
        public var codeFile: String

        enum CodingKeys: String, CodingKey {
            case type
            case codeID = "code_id"
            case debugID = "debug_id"
            case imageAddr = "image_addr"
            case imageSize = "image_size"
            case codeFile = "code_file"
        }
    }

    public struct Breadcrumb: Codable, Sendable, Equatable {
        public var timestamp: Double?
        public var type = "default"
        public var category: String
        public var level: String?
        public var message: String
    }

    /// Context values are strings, numbers or booleans.
    public enum ContextValue: Codable, Sendable, Equatable {
        case string(String)
        case integer(Int64)
        case bool(Bool)

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int64.self) {
                self = .integer(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            }
        }
    }

    public struct Request: Codable, Sendable, Equatable {
        public var method: String?
        public var url: String?
    }

    /// The sender: the same as an envelope header's.
    public typealias SDK = SentryEnvelope.SDK
}
