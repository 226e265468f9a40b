import BlackboxFormat
import BlackboxSentry
import Crypto
import Foundation

/// A Sentry event as a Blackbox report, so that it is grouped, stored, symbolicated, alerted on and
/// shown like the app's own (docs/sentry.md lists the mapping field by field):
/// - kind `crash` for `level: fatal`, `nonfatal` and `hang` for Blackbox's own assertion and hang
///   mechanisms, else `error`; `error.type` is the primary exception's type
///   (the last of the chain), `message` for a message event;
/// - the primary exception's stack (else the crashed thread's, else the event's own), innermost
///   first as in Blackbox reports, each frame keeping the SDK's `in_app`; native frames with an
///   `instruction_addr` inside a `debug_meta` image (its `code_id` is the ELF build-id) get an image
///   offset, so the symbolication service names them from the symbol store;
/// - release `package@version+build` → app name, version; `dist` → build; `server_name` → host;
///   tags → annotations; the request, transaction and trace → the scope; breadcrumbs → the log tail;
///   contexts, environment, SDK, logger, mechanism → `sentry.*` metadata; `fingerprint` → the
///   group (`CrashSignature`);
/// - the user is reduced to a digest of its id (`user.id-digest`): no email, name or address is kept.
struct SentryEventReport {
    /// Cut while converting, so that what an event's frames and images cost to read is bounded too
    /// (`ReportBounds` holds every stored report to the same counts).
    static let maxFrames = ReportBounds.maxFrames
    static let maxThreads = 256
    static let maxThreadFrames = ReportBounds.maxThreadFrames
    /// Frames of every thread together: 256 threads of 256 frames each were 65,536 frames from one 2 MB
    /// event (security review 2026-11-27, findings 6 and 7).
    static let maxAllThreadFrames = ReportBounds.maxAllThreadFrames
    static let maxImages = ReportBounds.maxImages
    static let maxBreadcrumbs = 200
    static let maxEntries = 128
    /// Source lines kept around a frame's line (sentry-python sends 5 each side), and bytes per line.
    static let maxContextLines = 5
    static let maxContextLineBytes = 200

    func report(_ event: SentryJSON, receivedAt: Date) -> CrashReport {
        let id = Self.uuid(event["event_id"]?.string) ?? UUID()
        let level = event["level"]?.string?.lowercased() ?? "error"
        let exceptions = event["exception"]?.values ?? []
        let primary = exceptions.last
        let message = Self.message(event)
        let release = Self.release(event["release"]?.string)
        let occurred = event["timestamp"]?.date.map { min($0, receivedAt.addingTimeInterval(86_400)) } ?? receivedAt

        let os = event["contexts"]?["os"]
        let device = event["contexts"]?["device"]
        var report = CrashReport(
            id: id, kind: Self.kind(level: level, mechanism: primary?["mechanism"]?["type"]?.string),
            app: .init(
                name: event["contexts"]?["app"]?["app_name"]?.string ?? release.name ?? event["platform"]?.string
                    ?? "unknown",
                version: release.version, build: event["dist"]?.string ?? release.build),
            host: .init(
                name: event["server_name"]?.string ?? device?["name"]?.string ?? "unknown",
                os: [os?["name"]?.string, os?["version"]?.string].compactMap { $0 }.joined(separator: " "),
                kernel: os?["kernel_version"]?.string ?? "", architecture: device?["arch"]?.string ?? ""),
            process: .init(pid: 0, crashTime: occurred), thread: .init(id: 0, name: nil))

        let images = Self.images(event["debug_meta"]?["images"]?.values ?? [])
        report.images = images.map(\.image)
        let ranges = ImageRanges(images.map { ($0.start, $0.end) })
        let threads = event["threads"]?.values ?? []
        let crashedThread =
            threads.first { $0["id"] == primary?["thread_id"] && primary?["thread_id"] != nil }
            ?? threads.first { $0["crashed"]?.bool == true } ?? threads.first { $0["current"]?.bool == true }
        let stack =
            primary?["stacktrace"]?["frames"]?.values ?? crashedThread?["stacktrace"]?["frames"]?.values
            ?? event["stacktrace"]?["frames"]?.values ?? []
        report.frames = Self.frames(stack, images: images, ranges: ranges, limit: Self.maxFrames)
        if report.frames.count == Self.maxFrames, stack.count > Self.maxFrames {
            report.omittedFrames = .init(omittedAfterIndex: Self.maxFrames - 1, count: stack.count - Self.maxFrames)
        }
        report.frameSource = "sentry"
        report.symbolicated = !report.frames.isEmpty && report.frames.allSatisfy { !$0.symbols.isEmpty }
        if let crashedThread {
            report.thread = .init(
                id: Self.threadID(crashedThread["id"]), name: crashedThread["name"]?.string)
        }
        if !threads.isEmpty {
            var framesLeft = Self.maxAllThreadFrames
            report.threads = threads.prefix(Self.maxThreads).map { thread in
                let frames = Self.frames(
                    thread["stacktrace"]?["frames"]?.values ?? [], images: images, ranges: ranges,
                    limit: min(Self.maxThreadFrames, framesLeft))
                framesLeft -= frames.count
                let crashed = thread == crashedThread
                return .init(
                    id: Self.threadID(thread["id"]), name: thread["name"]?.string, crashed: crashed,
                    frameSource: "sentry", problem: nil, frames: crashed && frames.isEmpty ? report.frames : frames)
            }
        }

        let type = primary?["type"]?.string ?? (message != nil ? "message" : "event")
        if let primary {
            let value = primary["value"]?.string
            report.reason = value.map { "\(type): \($0)" } ?? type
        } else {
            report.reason = message ?? "an event without a message or an exception"
        }
        if let signal = primary?["mechanism"]?["meta"]?["signal"], let number = signal["number"]?.integer,
            let name = signal["name"]?.string, (1...64).contains(number)
        {
            report.signal = .init(
                number: Int32(number), name: name, code: Int32(clamping: signal["code"]?.integer ?? 0),
                codeName: signal["code_name"]?.string, faultAddress: "0x0")
        }

        var metadata: [String: String] = ["error.type": type, "sentry.level": level]
        metadata["sentry.platform"] = event["platform"]?.string
        metadata["sentry.environment"] = event["environment"]?.string
        metadata["sentry.logger"] = event["logger"]?.string
        metadata["sentry.transaction"] = event["transaction"]?.string
        metadata["sentry.release"] = event["release"]?.string
        metadata["sentry.event_id"] = event["event_id"]?.string
        if let sdk = event["sdk"] {
            metadata["sentry.sdk"] = [sdk["name"]?.string, sdk["version"]?.string].compactMap { $0 }.joined(
                separator: " ")
        }
        if let mechanism = primary?["mechanism"] {
            metadata["sentry.mechanism"] = mechanism["type"]?.string
            metadata["sentry.handled"] = mechanism["handled"]?.bool.map { $0 ? "true" : "false" }
        }
        if let fingerprint = event["fingerprint"]?.values?.map(\.text), !fingerprint.isEmpty {
            metadata[CrashSignature.fingerprintKey] = fingerprint.joined(separator: CrashSignature.fingerprintSeparator)
        }
        for (name, context) in (event["contexts"]?.object ?? [:]).sorted(by: { $0.key < $1.key }) {
            for (key, value) in (context.object ?? [:]).sorted(by: { $0.key < $1.key })
            where metadata.count < Self.maxEntries && value != .null {
                metadata["contexts.\(name).\(key)"] = value.text
            }
        }
        for (key, value) in (event["extra"]?.object ?? [:]).sorted(by: { $0.key < $1.key })
        where metadata.count < Self.maxEntries {
            metadata["extra.\(key)"] = value.text
        }
        if let user = event["user"]?.object,
            let userID = user["id"]?.text ?? user["email"]?.string ?? user["username"]?.string
        {
            // Counting affected users needs only that two events are the same user.
            metadata["user.id-digest"] = String(SHA256.hash(data: Data(userID.utf8)).lowercaseHex.prefix(16))
        }
        report.metadata = metadata
        let tags = Self.tags(event["tags"])
        report.annotations = tags.isEmpty ? nil : tags
        report.scope = Self.scope(event)
        report.logTail = Self.breadcrumbLines(event["breadcrumbs"]?.values ?? [])
        report.notes = ["received through the Sentry protocol" + (metadata["sentry.sdk"].map { " from \($0)" } ?? "")]
        return report
    }

    // MARK: fields

    /// `fatal` is a crash; Blackbox's own assertion and hang events (its Sentry delivery's mechanism
    /// types) come back as the kinds they were sent as, so they group with the same reports sent
    /// as bundles; anything else is an error.
    static func kind(level: String, mechanism: String?) -> CrashReport.Kind {
        if level == "fatal" { return .crash }
        switch mechanism {
        case "blackbox.assertion": return .nonfatal
        case "AppHang": return .hang
        default: return .error
        }
    }

    /// `event_id`: 32 hex digits (Sentry's form) or a UUID with dashes.
    static func uuid(_ text: String?) -> UUID? {
        guard let text else { return nil }
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else { return nil }
        var dashed = hex
        for position in [8, 13, 18, 23] { dashed.insert("-", at: dashed.index(dashed.startIndex, offsetBy: position)) }
        return UUID(uuidString: dashed)
    }

    /// `logentry`/`message`: a string, or `{formatted, message, params}`.
    static func message(_ event: SentryJSON) -> String? {
        for field in ["logentry", "message"] {
            guard let value = event[field] else { continue }
            if let text = value.string { return text }
            if let text = value["formatted"]?.string ?? value["message"]?.string { return text }
        }
        return nil
    }

    /// Sentry's convention `package@version+build` (`my-app@1.2.0+45`); a plain release is a version.
    static func release(_ text: String?) -> (name: String?, version: String?, build: String?) {
        guard let text, !text.isEmpty else { return (nil, nil, nil) }
        guard let at = text.firstIndex(of: "@"), at != text.startIndex else { return (nil, text, nil) }
        let name = String(text[..<at])
        let rest = text[text.index(after: at)...]
        if let plus = rest.firstIndex(of: "+") {
            return (name, String(rest[..<plus]), String(rest[rest.index(after: plus)...]))
        }
        return (name, String(rest), nil)
    }

    /// A list of `[key, value]` pairs or an object.
    static func tags(_ value: SentryJSON?) -> [String: String] {
        var tags: [String: String] = [:]
        if let object = value?.object {
            for (key, value) in object.sorted(by: { $0.key < $1.key }) where tags.count < maxEntries {
                tags[key] = value.text
            }
        } else if let pairs = value?.values {
            for pair in pairs where tags.count < maxEntries {
                if let pair = pair.values, pair.count == 2, let key = pair[0].string { tags[key] = pair[1].text }
            }
        }
        return tags
    }

    /// What Blackbox's request scope holds: the scope itself when Blackbox sent the event (its
    /// `blackbox.scope` context), then the event's request, transaction and trace context.
    static func scope(_ event: SentryJSON) -> [String: String]? {
        var scope: [String: String] = [:]
        for (key, value) in (event["contexts"]?["blackbox.scope"]?.object ?? [:]).sorted(by: { $0.key < $1.key })
        where scope.count < maxEntries {
            if let text = value.string { scope[key] = text }
        }
        let request = event["request"]
        scope["method"] = request?["method"]?.string
        if let url = request?["url"]?.string {
            scope["url"] = url
            scope["route"] = URLComponents(string: url)?.path
        }
        if let transaction = event["transaction"]?.string { scope["route"] = transaction }
        scope["trace-id"] = event["contexts"]?["trace"]?["trace_id"]?.string
        scope["span-id"] = event["contexts"]?["trace"]?["span_id"]?.string
        return scope.isEmpty ? nil : scope
    }

    static func breadcrumbLines(_ crumbs: [SentryJSON]) -> [String] {
        crumbs.suffix(maxBreadcrumbs).map { crumb in
            let time = crumb["timestamp"]?.date.map { $0.formatted(.iso8601) } ?? "-"
            let level = (crumb["level"]?.string ?? "info").uppercased()
            let category = crumb["category"]?.string ?? crumb["type"]?.string ?? "breadcrumb"
            var line = "\(time) \(level) \(category): \(crumb["message"]?.string ?? "")"
            if let data = crumb["data"], data.object?.isEmpty == false { line += " \(data.text)" }
            return line
        }
    }

    static func threadID(_ value: SentryJSON?) -> Int32 {
        value?.integer.map { Int32(truncatingIfNeeded: $0) } ?? 0
    }

    // MARK: frames and images

    struct LoadedImage {
        var image: CrashReport.Image
        var start: UInt64
        var end: UInt64
    }

    /// `debug_meta.images` with an address range; the `code_id` is the ELF build-id (lowercase hex).
    static func images(_ values: [SentryJSON]) -> [LoadedImage] {
        values.prefix(maxImages).compactMap { value in
            guard let start = address(value["image_addr"]) else { return nil }
            let size = address(value["image_size"]) ?? value["image_size"]?.integer.map { UInt64(max(0, $0)) } ?? 0
            let (end, overflow) = start.addingReportingOverflow(size)
            let codeID = value["code_id"]?.string?.lowercased()
            let buildID = codeID.flatMap {
                $0.count <= 80 && $0.count % 2 == 0 && $0.allSatisfy(\.isHexDigit) ? $0 : nil
            }
            let hex = "0x" + String(start, radix: 16)
            return LoadedImage(
                image: .init(
                    path: value["code_file"]?.string ?? value["debug_file"]?.string ?? "unknown", bias: hex, start: hex,
                    end: "0x" + String(overflow ? UInt64.max : end, radix: 16), buildID: buildID),
                start: start, end: overflow ? .max : end)
        }
    }

    /// Sentry's frames are oldest first; Blackbox's innermost first. A frame with neither an address
    /// nor a function says nothing and is left out (an event of `{}` frames was stored at 70 times
    /// its size).
    static func frames(_ values: [SentryJSON], images: [LoadedImage], ranges: ImageRanges, limit: Int)
        -> [CrashReport.Frame]
    {
        values.reversed().lazy.filter { $0["instruction_addr"] != nil || $0["function"] != nil || $0["symbol"] != nil }
            .prefix(limit).enumerated().map { index, value in
                let address = address(value["instruction_addr"])
                let imageIndex = address.flatMap { ranges.index(containing: $0) }
                var frame = CrashReport.Frame(
                    index: index, address: address.map { "0x" + String($0, radix: 16) } ?? "0x0")
                if let imageIndex, let address {
                    frame.imageIndex = imageIndex
                    frame.imageOffset = "0x" + String(address - images[imageIndex].start, radix: 16)
                }
                if let function = value["function"]?.string ?? value["symbol"]?.string, !function.isEmpty,
                    function != "<unknown>"
                {
                    let module = value["module"]?.string
                    frame.symbols = [
                        .init(
                            function: module.map { "\($0).\(function)" } ?? function,
                            file: value["abs_path"]?.string ?? value["filename"]?.string,
                            line: value["lineno"]?.integer.flatMap { Int(exactly: $0) },
                            column: value["colno"]?.integer.flatMap { Int(exactly: $0) })
                    ]
                }
                frame.inApp = value["in_app"]?.bool
                frame.sourceContext = sourceContext(value)
                return frame
            }
    }

    /// `pre_context`, `context_line`, `post_context` (interpreted languages' SDKs read them from the
    /// source), bounded: a few lines each side, each cut short.
    static func sourceContext(_ frame: SentryJSON) -> CrashReport.SourceContext? {
        guard let line = frame["context_line"]?.string else { return nil }
        func cut(_ text: String) -> String {
            text.utf8.count <= maxContextLineBytes
                ? text : String(decoding: text.utf8.prefix(maxContextLineBytes), as: UTF8.self)
        }
        let before = (frame["pre_context"]?.values ?? []).suffix(maxContextLines).map { cut($0.string ?? "") }
        let after = (frame["post_context"]?.values ?? []).prefix(maxContextLines).map { cut($0.string ?? "") }
        return .init(before: before, line: cut(line), after: after)
    }

    /// `"0x7f00ab12"` or a number.
    static func address(_ value: SentryJSON?) -> UInt64? {
        if let text = value?.string {
            let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
            return UInt64(digits, radix: 16)
        }
        return value?.integer.flatMap { $0 >= 0 ? UInt64($0) : nil }
    }
}
