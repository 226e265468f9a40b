import Foundation

/// Sentry's event payload (develop.sentry.dev/sdk/data-model/event-payloads/) as Codable values,
/// written once for both directions: `SentryEvent(report:…)` fills it from a Blackbox report for the
/// app's delivery, `SentryEvent(lenient:limits:)` reads any SDK's event into it for the collector
/// (SentryEvent+Lenient.swift), and `CrashReport(sentryEvent:…)` turns that into a report. Nil
/// fields are left out of the JSON, as Sentry SDKs do; almost every field is optional because the
/// protocol makes it so. docs/sentry.md lists both mappings.
public struct SentryEvent: Codable, Sendable, Equatable {
    public var eventID: String?
    /// Seconds since 1970, with fractions.
    public var timestamp: Double?
    public var platform: String? = "native"
    public var level: String?
    public var logger: String?
    public var release: String?
    public var dist: String?
    public var environment: String?
    public var serverName: String?
    public var transaction: String?
    /// Read from `logentry` too (`message` is its older name); written as `message`.
    public var message: Message?
    public var exception: Values<Exception>?
    public var threads: Values<Thread>?
    /// An event's own stack, when it has no exception or thread (a message with a stack).
    public var stacktrace: Stacktrace?
    public var debugMeta: DebugMeta?
    public var breadcrumbs: Values<Breadcrumb>?
    /// Free-form by the protocol: each context an object of any values.
    public var contexts: [String: [String: SentryJSON]]?
    public var tags: [String: String]?
    public var extra: [String: SentryJSON]?
    public var request: Request?
    public var user: User?
    /// Replaces the grouping Sentry (and the collector) would compute.
    public var fingerprint: [String]?
    public var sdk: SDK?

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id"
        case timestamp, platform, level, logger, release, dist, environment
        case serverName = "server_name"
        case transaction, message, exception, threads, stacktrace
        case debugMeta = "debug_meta"
        case breadcrumbs, contexts, tags, extra, request, user, fingerprint, sdk
    }

    public struct Values<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        public var values: [Value]
    }

    public struct Message: Codable, Sendable, Equatable {
        public var formatted: String?
        /// The template `formatted` was made from.
        public var message: String?
    }

    public struct Exception: Codable, Sendable, Equatable {
        public var type: String?
        public var value: String?
        public var module: String?
        public var threadID: Int64?
        public var mechanism: Mechanism?
        public var stacktrace: Stacktrace?

        enum CodingKeys: String, CodingKey {
            case type, value, module
            case threadID = "thread_id"
            case mechanism, stacktrace
        }
    }

    public struct Mechanism: Codable, Sendable, Equatable {
        public var type: String?
        public var handled: Bool?
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
        /// `[start, end)` of the frames left out of `frames` (the oldest ones, when a reader cut a
        /// deep stack to its limit).
        public var framesOmitted: [Int]?

        enum CodingKeys: String, CodingKey {
            case frames, registers
            case instructionAddrAdjustment = "instruction_addr_adjustment"
            case framesOmitted = "frames_omitted"
        }
    }

    public struct Frame: Codable, Sendable, Equatable {
        public var instructionAddr: String?
        public var imageAddr: String?
        public var function: String?
        public var rawFunction: String?
        /// What interpreted languages' SDKs send instead of an address or a function: the symbol name.
        public var symbol: String?
        /// The function's module (Python's `shop.cart`): the function's name is qualified with it.
        public var module: String?
        public var package: String?
        public var filename: String?
        public var absPath: String?
        public var lineno: Int?
        public var colno: Int?
        public var inApp: Bool?
        /// Set on a Swift async resume point: each begins the chained stack of an awaiting caller.
        public var stackStart: Bool?
        /// Source lines around `lineno`, as interpreted languages' SDKs read them from the source.
        public var preContext: [String]?
        public var contextLine: String?
        public var postContext: [String]?

        enum CodingKeys: String, CodingKey {
            case instructionAddr = "instruction_addr"
            case imageAddr = "image_addr"
            case function
            case rawFunction = "raw_function"
            case symbol, module, package, filename
            case absPath = "abs_path"
            case lineno, colno
            case inApp = "in_app"
            case stackStart = "stack_start"
            case preContext = "pre_context"
            case contextLine = "context_line"
            case postContext = "post_context"
        }
    }

    public struct Thread: Codable, Sendable, Equatable {
        public var id: Int64?
        public var name: String?
        public var crashed: Bool?
        public var current: Bool?
        /// Left out for the crashed thread: its stack is the exception's.
        public var stacktrace: Stacktrace?
    }

    public struct DebugMeta: Codable, Sendable, Equatable {
        public var images: [Image]
    }

    public struct Image: Codable, Sendable, Equatable {
        public var type: String? = "elf"
        public var codeID: String?
        public var debugID: String?
        /// `0x…`; an SDK may send a number, which is read as this form.
        public var imageAddr: String
        public var imageSize: UInt64
        public var codeFile: String?
        public var debugFile: String?

        enum CodingKeys: String, CodingKey {
            case type
            case codeID = "code_id"
            case debugID = "debug_id"
            case imageAddr = "image_addr"
            case imageSize = "image_size"
            case codeFile = "code_file"
            case debugFile = "debug_file"
        }
    }

    public struct Breadcrumb: Codable, Sendable, Equatable {
        public var timestamp: Double?
        public var type: String? = "default"
        public var category: String?
        public var level: String?
        public var message: String?
        public var data: [String: SentryJSON]?
    }

    public struct Request: Codable, Sendable, Equatable {
        public var method: String?
        public var url: String?
    }

    /// Who was affected: the collector keeps only a digest of the first of these it finds.
    public struct User: Codable, Sendable, Equatable {
        public var id: String?
        public var email: String?
        public var username: String?
    }

    /// The sender: the same as an envelope header's.
    public typealias SDK = SentryEnvelope.SDK
}
