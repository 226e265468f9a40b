import BlackboxFormat
import Foundation

extension CrashReport {
    /// A Sentry event as a Blackbox report, so that it is grouped, stored, symbolicated, alerted on
    /// and shown like the app's own; the reverse of `SentryEvent(report:…)`, beside it in this module
    /// and held to it by a round-trip test (docs/sentry.md lists the mapping field by field):
    /// - kind `crash` for `level: fatal`, `nonfatal` and `hang` for Blackbox's own assertion and hang
    ///   mechanisms, else `error`; `error.type` is the primary exception's type (the last of the
    ///   chain), `message` for a message event;
    /// - the primary exception's stack (else the failing thread's, else the event's own), innermost
    ///   first as in Blackbox reports, each frame keeping the SDK's `in_app`; native frames with an
    ///   `instruction_addr` inside a `debug_meta` image (its `code_id` is the ELF build-id) get an
    ///   image offset, so the symbolication service names them from the symbol store;
    /// - release `package@version+build` → app name, version; `dist` → build; `server_name` → host;
    ///   tags → annotations; the request, transaction and trace → the scope; breadcrumbs → the log
    ///   tail; contexts, environment, SDK, logger, mechanism → `sentry.*` metadata; `fingerprint` →
    ///   `SentryEvent.fingerprintKey`, which the collector groups by.
    /// The user is not mapped: the collector keeps only a digest of it.
    public init(sentryEvent event: SentryEvent, receivedAt: Date, limits: SentryEvent.Limits = .init()) {
        let id = event.eventID.flatMap(Self.sentryEventUUID) ?? UUID()
        let level = event.level?.lowercased() ?? "error"
        let primary = event.exception?.values.last
        let message = event.message.flatMap { $0.formatted ?? $0.message }
        let release = SentryRelease(event.release)
        let occurred =
            event.timestamp.map { min(Date(timeIntervalSince1970: $0), receivedAt.addingTimeInterval(86_400)) }
            ?? receivedAt

        let os = event.contexts?["os"]
        let device = event.contexts?["device"]
        self.init(
            id: id, kind: Self.sentryKind(level: level, mechanism: primary?.mechanism?.type),
            app: .init(
                name: event.contexts?["app"]?["app_name"]?.string ?? release.name ?? event.platform ?? "unknown",
                version: release.version, build: event.dist ?? release.build),
            host: .init(
                name: event.serverName ?? device?["name"]?.string ?? "unknown",
                os: [os?["name"]?.string, os?["version"]?.string].compactMap { $0 }.joined(separator: " "),
                kernel: os?["kernel_version"]?.string ?? "", architecture: device?["arch"]?.string ?? ""),
            process: .init(pid: 0, crashTime: occurred), thread: .init(id: 0, name: nil))

        let images = LoadedImages(event.debugMeta?.images ?? [], limits: limits)
        self.images = images.images.map(\.image)
        let threads = event.threads?.values ?? []
        let failing = SentryEvent.failingThreadIndex(of: threads, exceptionThreadID: primary?.threadID)
        let stack = primary?.stacktrace ?? failing.flatMap { threads[$0].stacktrace } ?? event.stacktrace
        frames = images.frames(stack?.frames ?? [], limit: limits.frames)
        if let omitted = stack?.framesOmitted, omitted.count == 2, omitted[1] > omitted[0], !frames.isEmpty {
            omittedFrames = .init(omittedAfterIndex: frames.count - 1, count: omitted[1] - omitted[0])
        }
        frameSource = "sentry"
        symbolicated = !frames.isEmpty && frames.allSatisfy { !$0.symbols.isEmpty }
        if let failing {
            thread = .init(id: Self.sentryThreadID(threads[failing].id), name: threads[failing].name)
        }
        if !threads.isEmpty {
            var framesLeft = limits.allThreadFrames
            let failingFrames = frames
            self.threads = threads.enumerated().map { index, thread in
                let frames = images.frames(
                    thread.stacktrace?.frames ?? [], limit: min(limits.threadFrames, framesLeft))
                framesLeft -= frames.count
                let crashed = index == failing
                return .init(
                    id: Self.sentryThreadID(thread.id), name: thread.name, crashed: crashed, frameSource: "sentry",
                    problem: nil, frames: crashed && frames.isEmpty ? failingFrames : frames)
            }
        }

        let type = primary?.type ?? (message != nil ? "message" : "event")
        if let primary {
            reason = primary.value.map { "\(type): \($0)" } ?? type
        } else {
            reason = message ?? "an event without a message or an exception"
        }
        if let signal = primary?.mechanism?.meta?.signal {
            self.signal = .init(
                number: signal.number, name: signal.name, code: signal.code ?? 0, codeName: signal.codeName,
                faultAddress: "0x0")
        }
        metadata = Self.sentryMetadata(of: event, type: type, level: level, limit: limits.entries)
        annotations = event.tags?.isEmpty == false ? event.tags : nil
        scope = Self.sentryScope(of: event, limit: limits.entries)
        logTail = (event.breadcrumbs?.values ?? []).suffix(limits.breadcrumbs).map(Self.logLine(ofBreadcrumb:))
        notes = ["received through the Sentry protocol" + (metadata["sentry.sdk"].map { " from \($0)" } ?? "")]
    }

    // MARK: fields

    /// `fatal` is a crash; Blackbox's own assertion and hang events (its Sentry delivery's mechanism
    /// types) come back as the kinds they were sent as, so they group with the same reports sent
    /// as bundles; anything else is an error.
    static func sentryKind(level: String, mechanism: String?) -> Kind {
        if level == "fatal" { return .crash }
        switch mechanism {
        case "blackbox.assertion": return .nonfatal
        case "AppHang": return .hang
        default: return .error
        }
    }

    /// `event_id`: 32 hex digits (Sentry's form) or a UUID with dashes.
    static func sentryEventUUID(_ text: String) -> UUID? {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else { return nil }
        var dashed = hex
        for position in [8, 13, 18, 23] { dashed.insert("-", at: dashed.index(dashed.startIndex, offsetBy: position)) }
        return UUID(uuidString: dashed)
    }

    static func sentryThreadID(_ id: Int64?) -> Int32 { id.map { Int32(truncatingIfNeeded: $0) } ?? 0 }

    static func sentryMetadata(of event: SentryEvent, type: String, level: String, limit: Int) -> [String: String] {
        let primary = event.exception?.values.last
        var metadata: [String: String] = ["error.type": type, "sentry.level": level]
        metadata["sentry.platform"] = event.platform
        metadata["sentry.environment"] = event.environment
        metadata["sentry.logger"] = event.logger
        metadata["sentry.transaction"] = event.transaction
        metadata["sentry.release"] = event.release
        metadata["sentry.event_id"] = event.eventID
        if let sdk = event.sdk {
            metadata["sentry.sdk"] = [sdk.name, sdk.version].filter { !$0.isEmpty }.joined(separator: " ")
        }
        if let mechanism = primary?.mechanism {
            metadata["sentry.mechanism"] = mechanism.type
            metadata["sentry.handled"] = mechanism.handled.map { $0 ? "true" : "false" }
        }
        if let fingerprint = event.fingerprint, !fingerprint.isEmpty {
            metadata[SentryEvent.fingerprintKey] = fingerprint.joined(separator: SentryEvent.fingerprintSeparator)
        }
        for (name, context) in (event.contexts ?? [:]).sorted(by: { $0.key < $1.key }) {
            for (key, value) in context.sorted(by: { $0.key < $1.key }) where metadata.count < limit && value != .null {
                metadata["contexts.\(name).\(key)"] = value.text
            }
        }
        for (key, value) in (event.extra ?? [:]).sorted(by: { $0.key < $1.key }) where metadata.count < limit {
            metadata["extra.\(key)"] = value.text
        }
        return metadata
    }

    /// What Blackbox's request scope holds: the scope itself when Blackbox sent the event (its
    /// `blackbox.scope` context), then the event's request, transaction and trace context.
    static func sentryScope(of event: SentryEvent, limit: Int) -> [String: String]? {
        var scope: [String: String] = [:]
        for (key, value) in (event.contexts?["blackbox.scope"] ?? [:]).sorted(by: { $0.key < $1.key })
        where scope.count < limit {
            if let text = value.string { scope[key] = text }
        }
        scope["method"] = event.request?.method
        if let url = event.request?.url {
            scope["url"] = url
            scope["route"] = URLComponents(string: url)?.path
        }
        if let transaction = event.transaction { scope["route"] = transaction }
        scope["trace-id"] = event.contexts?["trace"]?["trace_id"]?.string
        scope["span-id"] = event.contexts?["trace"]?["span_id"]?.string
        return scope.isEmpty ? nil : scope
    }

    static func logLine(ofBreadcrumb crumb: SentryEvent.Breadcrumb) -> String {
        let time = crumb.timestamp.map { Date(timeIntervalSince1970: $0).formatted(.iso8601) } ?? "-"
        let level = (crumb.level ?? "info").uppercased()
        let category = crumb.category ?? crumb.type ?? "breadcrumb"
        var line = "\(time) \(level) \(category): \(crumb.message ?? "")"
        if let data = crumb.data, !data.isEmpty { line += " \(SentryJSON.object(data).text)" }
        return line
    }
}

/// An event's `debug_meta` images with their address ranges, and its frames placed in them.
private struct LoadedImages {
    struct Loaded {
        var image: CrashReport.Image
        var start: UInt64
    }

    let images: [Loaded]
    let ranges: ImageRanges
    let limits: SentryEvent.Limits

    /// The `code_id` is the ELF build-id (lowercase hex).
    init(_ images: [SentryEvent.Image], limits: SentryEvent.Limits) {
        self.limits = limits
        var loaded: [Loaded] = []
        var ranges: [(UInt64, UInt64)] = []
        for image in images {
            guard let start = UInt64(hex: image.imageAddr) else { continue }
            let (sum, overflow) = start.addingReportingOverflow(image.imageSize)
            let end = overflow ? UInt64.max : sum
            let codeID = image.codeID?.lowercased()
            let buildID = codeID.flatMap {
                $0.count <= 80 && $0.count % 2 == 0 && $0.allSatisfy(\.isHexDigit) ? $0 : nil
            }
            let hex = "0x" + String(start, radix: 16)
            loaded.append(
                Loaded(
                    image: .init(
                        path: image.codeFile ?? image.debugFile ?? "unknown", bias: hex, start: hex,
                        end: "0x" + String(end, radix: 16), buildID: buildID),
                    start: start))
            ranges.append((start, end))
        }
        self.images = loaded
        self.ranges = ImageRanges(ranges)
    }

    /// Sentry's frames are oldest first; Blackbox's innermost first.
    func frames(_ frames: [SentryEvent.Frame], limit: Int) -> [CrashReport.Frame] {
        frames.reversed().prefix(limit).enumerated().map { index, sent in
            let address = sent.instructionAddr.flatMap { UInt64(hex: $0) }
            let imageIndex = address.flatMap { ranges.index(containing: $0) }
            var frame = CrashReport.Frame(index: index, address: address.map { "0x" + String($0, radix: 16) } ?? "0x0")
            if let imageIndex, let address {
                frame.imageIndex = imageIndex
                frame.imageOffset = "0x" + String(address - images[imageIndex].start, radix: 16)
            }
            if let function = sent.function ?? sent.symbol, !function.isEmpty, function != "<unknown>" {
                frame.symbols = [
                    .init(
                        function: sent.module.map { "\($0).\(function)" } ?? function,
                        file: sent.absPath ?? sent.filename, line: sent.lineno, column: sent.colno)
                ]
            }
            frame.inApp = sent.inApp
            frame.sourceContext = sourceContext(sent)
            return frame
        }
    }

    /// `pre_context`, `context_line`, `post_context`, bounded: a few lines each side, each cut short.
    func sourceContext(_ frame: SentryEvent.Frame) -> CrashReport.SourceContext? {
        guard let line = frame.contextLine else { return nil }
        let lines = limits.contextLines
        let lineBytes = limits.contextLineBytes
        func cut(_ text: String) -> String {
            text.utf8.count <= lineBytes ? text : String(decoding: text.utf8.prefix(lineBytes), as: UTF8.self)
        }
        return .init(
            before: (frame.preContext ?? []).suffix(lines).map(cut), line: cut(line),
            after: (frame.postContext ?? []).prefix(lines).map(cut))
    }
}

extension SentryEvent {
    /// The metadata entry a Sentry event's `fingerprint` travels in, its values joined by the
    /// separator.
    public static let fingerprintKey = "sentry.fingerprint"
    public static let fingerprintSeparator = "\u{1F}"
}

/// Sentry's release convention `package@version+build` (`my-app@1.2.0+45`); a plain release is a
/// version.
public struct SentryRelease: Sendable, Equatable {
    public var name: String?
    public var version: String?
    public var build: String?

    public init(_ text: String?) {
        guard let text, !text.isEmpty else { return }
        guard let at = text.firstIndex(of: "@"), at != text.startIndex else {
            version = text
            return
        }
        name = String(text[..<at])
        let rest = text[text.index(after: at)...]
        if let plus = rest.firstIndex(of: "+") {
            version = String(rest[..<plus])
            build = String(rest[rest.index(after: plus)...])
        } else {
            version = String(rest)
        }
    }
}
