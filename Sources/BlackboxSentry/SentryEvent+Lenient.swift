import BlackboxFormat
import Foundation

extension SentryEvent {
    /// How much of an SDK's event is read: the parsed tree is already in memory (its parse is
    /// bounded by the item's size), and these bound what the typed event and the report made from it
    /// hold, so that an event of 65,536 empty frames costs no more to read than a real one (security
    /// review 2026-11-27, findings 6 and 7). The defaults are the crash handler's own counts
    /// (`RawCrashReport.Limits`): a report Blackbox sent comes back whole.
    public struct Limits: Sendable, Equatable {
        /// The failing stack's frames.
        public var frames = RawCrashReport.Limits.frames
        public var threads = 256
        /// A chain's exceptions, the primary (the last) among them.
        public var exceptions = 16
        /// Each other thread's frames.
        public var threadFrames = RawCrashReport.Limits.threadFrames
        /// The threads' frames together.
        public var allThreadFrames = 8_192
        public var images = RawCrashReport.Limits.images
        public var breadcrumbs = 200
        /// Tags, and the entries the report's metadata takes from contexts and extra.
        public var entries = 128
        /// Source lines kept each side of a frame's line (sentry-python sends 5), and bytes per line.
        public var contextLines = 5
        public var contextLineBytes = 200

        public init() {}
    }

    /// Reads an SDK's event leniently: a field of an unexpected shape is left out, never an error
    /// (SDKs disagree on shapes the protocol allows several of: a list or `{"values": […]}`, a
    /// number or an RFC 3339 string, a string or `{"formatted": …}`), and lists are cut to `limits`.
    /// A frame that names neither an address nor a function says nothing and is left out. What this
    /// type writes (`JSONEncoder`), this reads back equal.
    public init(lenient json: SentryJSON, limits: Limits = Limits()) {
        eventID = json["event_id"]?.string
        timestamp = json["timestamp"]?.secondsSince1970
        platform = json["platform"]?.string
        level = json["level"]?.string
        logger = json["logger"]?.string
        release = json["release"]?.string
        dist = json["dist"]?.string
        environment = json["environment"]?.string
        serverName = json["server_name"]?.string
        transaction = json["transaction"]?.string
        message = (json["logentry"] ?? json["message"]).flatMap(Message.init(lenient:))
        let exceptions = (json["exception"]?.values ?? []).suffix(limits.exceptions).map {
            Exception(lenient: $0, limits: limits)
        }
        exception = json["exception"] == nil ? nil : Values(values: exceptions)
        threads = json["threads"].map { Values(values: Self.threads($0, exceptions: exceptions, limits: limits)) }
        stacktrace = json["stacktrace"].flatMap { Stacktrace(lenient: $0, limit: limits.frames) }
        debugMeta = json["debug_meta"].map {
            DebugMeta(images: ($0["images"]?.values ?? []).prefix(limits.images).compactMap(Image.init(lenient:)))
        }
        breadcrumbs = json["breadcrumbs"].map {
            Values(values: ($0.values ?? []).suffix(limits.breadcrumbs).map(Breadcrumb.init(lenient:)))
        }
        contexts = json["contexts"]?.object?.compactMapValues(\.object)
        tags = json["tags"].map { Self.tags($0, limit: limits.entries) }
        extra = json["extra"]?.object
        request = json["request"].map { Request(method: $0["method"]?.string, url: $0["url"]?.string) }
        user = json["user"]?.object.map {
            User(id: $0["id"]?.text, email: $0["email"]?.string, username: $0["username"]?.string)
        }
        fingerprint = json["fingerprint"]?.values?.map(\.text)
        sdk = json["sdk"].flatMap { sdk in
            sdk["name"]?.string.map { SDK(name: $0, version: sdk["version"]?.string ?? "") }
        }
    }

    /// The index of the thread the failure happened on: the primary exception's, else the one marked
    /// crashed, else the current one. `CrashReport(sentryEvent:)` uses the same choice.
    public static func failingThreadIndex(of threads: [Thread], exceptionThreadID: Int64?) -> Int? {
        if let exceptionThreadID, let index = threads.firstIndex(where: { $0.id == exceptionThreadID }) {
            return index
        }
        return threads.firstIndex { $0.crashed == true } ?? threads.firstIndex { $0.current == true }
    }

    /// The failing thread's stack may stand in for the exception's, so it is read to `frames`; the
    /// others to `threadFrames` each and `allThreadFrames` together (the failing one counted as it
    /// would be as another thread).
    private static func threads(_ json: SentryJSON, exceptions: [Exception], limits: Limits) -> [Thread] {
        let values = Array((json.values ?? []).prefix(limits.threads))
        var threads = values.map(Thread.init(lenientHeader:))
        let failing = failingThreadIndex(of: threads, exceptionThreadID: exceptions.last?.threadID)
        var framesLeft = limits.allThreadFrames
        for index in threads.indices {
            guard let stack = values[index]["stacktrace"] else { continue }
            let asOther = min(limits.threadFrames, framesLeft)
            threads[index].stacktrace = Stacktrace(lenient: stack, limit: index == failing ? limits.frames : asOther)
            framesLeft -= min(threads[index].stacktrace?.frames.count ?? 0, asOther)
        }
        return threads
    }

    /// An object, or a list of `[key, value]` pairs; values as text.
    private static func tags(_ json: SentryJSON, limit: Int) -> [String: String] {
        var tags: [String: String] = [:]
        if let object = json.object {
            for (key, value) in object.sorted(by: { $0.key < $1.key }) where tags.count < limit {
                tags[key] = value.text
            }
        } else if let pairs = json.values {
            for pair in pairs where tags.count < limit {
                if let pair = pair.values, pair.count == 2, let key = pair[0].string { tags[key] = pair[1].text }
            }
        }
        return tags
    }
}

extension SentryEvent.Message {
    /// A string, or `{formatted, message, params}`.
    init?(lenient json: SentryJSON) {
        if let text = json.string {
            self.init(formatted: text)
        } else if json["formatted"]?.string != nil || json["message"]?.string != nil {
            self.init(formatted: json["formatted"]?.string, message: json["message"]?.string)
        } else {
            return nil
        }
    }
}

extension SentryEvent.Exception {
    init(lenient json: SentryJSON, limits: SentryEvent.Limits) {
        self.init(
            type: json["type"]?.string, value: json["value"]?.string, module: json["module"]?.string,
            threadID: json["thread_id"]?.integer,
            mechanism: json["mechanism"].flatMap(SentryEvent.Mechanism.init(lenient:)),
            stacktrace: json["stacktrace"].flatMap { SentryEvent.Stacktrace(lenient: $0, limit: limits.frames) })
    }
}

extension SentryEvent.Mechanism {
    /// The type is kept as sent: a mechanism without one names none (the report's
    /// `sentry.mechanism` stays unset, as before the typed model).
    init?(lenient json: SentryJSON) {
        guard json.object != nil else { return nil }
        let signal = json["meta"]?["signal"].flatMap { signal -> Signal? in
            guard let number = signal["number"]?.integer, let name = signal["name"]?.string, (1...64).contains(number)
            else { return nil }
            return Signal(
                number: Int32(number), code: signal["code"]?.integer.map { Int32(clamping: $0) }, name: name,
                codeName: signal["code_name"]?.string)
        }
        self.init(
            type: json["type"]?.string, handled: json["handled"]?.bool, synthetic: json["synthetic"]?.bool,
            meta: json["meta"] == nil ? nil : Meta(signal: signal))
    }
}

extension SentryEvent.Stacktrace {
    /// Keeps the innermost `limit` frames that say something (Sentry's frames are oldest first) and
    /// names the rest in `framesOmitted`.
    init?(lenient json: SentryJSON, limit: Int) {
        guard json.object != nil else { return nil }
        let values = json["frames"]?.values ?? []
        var kept: [SentryEvent.Frame] = []
        var position = values.endIndex
        while position > values.startIndex, kept.count < limit {
            position -= 1
            if let frame = SentryEvent.Frame(lenient: values[position]) { kept.append(frame) }
        }
        let registers = json["registers"]?.object?.compactMapValues(\.string)
        self.init(
            frames: kept.reversed(), registers: registers?.isEmpty == false ? registers : nil,
            instructionAddrAdjustment: json["instruction_addr_adjustment"]?.string,
            framesOmitted: position > 0
                ? [0, position] : json["frames_omitted"]?.values?.compactMap { $0.integer.map { Int($0) } })
    }
}

extension SentryEvent.Frame {
    /// Nil for a frame with neither an address nor a function (an event of `{}` frames was once
    /// stored at 70 times its size).
    init?(lenient json: SentryJSON) {
        guard json.object != nil,
            json["instruction_addr"] != nil || json["function"] != nil || json["symbol"] != nil
        else { return nil }
        self.init(
            instructionAddr: SentryEvent.address(json["instruction_addr"]),
            imageAddr: SentryEvent.address(json["image_addr"]), function: json["function"]?.string,
            rawFunction: json["raw_function"]?.string, symbol: json["symbol"]?.string, module: json["module"]?.string,
            package: json["package"]?.string, filename: json["filename"]?.string, absPath: json["abs_path"]?.string,
            lineno: json["lineno"]?.integer.flatMap { Int(exactly: $0) },
            colno: json["colno"]?.integer.flatMap { Int(exactly: $0) }, inApp: json["in_app"]?.bool,
            stackStart: json["stack_start"]?.bool, preContext: json["pre_context"]?.values?.compactMap(\.string),
            contextLine: json["context_line"]?.string, postContext: json["post_context"]?.values?.compactMap(\.string))
    }
}

extension SentryEvent.Thread {
    /// A thread without its stack (`SentryEvent.threads` reads the stacks to their limits).
    init(lenientHeader json: SentryJSON) {
        self.init(
            id: json["id"]?.integer, name: json["name"]?.string, crashed: json["crashed"]?.bool,
            current: json["current"]?.bool)
    }
}

extension SentryEvent.Image {
    /// Nil without a start address; the size may be a number or a hex string.
    init?(lenient json: SentryJSON) {
        guard let start = SentryEvent.address(json["image_addr"]) else { return nil }
        let size = json["image_size"].flatMap {
            $0.string.flatMap { UInt64(hex: $0) } ?? $0.integer.map { UInt64(max(0, $0)) }
        }
        self.init(
            type: json["type"]?.string, codeID: json["code_id"]?.string, debugID: json["debug_id"]?.string,
            imageAddr: start, imageSize: size ?? 0, codeFile: json["code_file"]?.string,
            debugFile: json["debug_file"]?.string)
    }
}

extension SentryEvent.Breadcrumb {
    init(lenient json: SentryJSON) {
        self.init(
            timestamp: json["timestamp"]?.secondsSince1970, type: json["type"]?.string,
            category: json["category"]?.string, level: json["level"]?.string, message: json["message"]?.string,
            data: json["data"]?.object)
    }
}

extension SentryEvent {
    /// An address as `0x…` hex, from a string (`"0x7f00ab12"`, kept as sent when it is one) or a
    /// number; nil for anything else.
    static func address(_ json: SentryJSON?) -> String? {
        if let text = json?.string { return UInt64(hex: text) != nil ? text : nil }
        return json?.integer.flatMap { $0 >= 0 ? "0x" + String(UInt64($0), radix: 16) : nil }
    }
}
