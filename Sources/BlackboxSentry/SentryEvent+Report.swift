import BlackboxFormat
import Foundation

extension SentryEvent {
    /// The event of a report, or nil for a report Sentry has no meaning for (a termination other
    /// than an OOM kill: it counts as an abnormal session instead). docs/sentry.md, "Sending to
    /// Sentry", lists the mapping field by field.
    public init?(report: CrashReport, release: String?, environment: String?) {
        guard let kind = Kind(report) else { return nil }
        self.init(
            eventID: report.id.uuidString.replacingOccurrences(of: "-", with: "").lowercased(),
            timestamp: report.process.crashTime.timeIntervalSince1970, level: kind.level,
            sdk: SDK(name: Self.sdkName, version: Self.sdkVersion))
        self.logger = "blackbox"
        self.release = (release ?? Self.release(of: report.app)).map(Self.releaseName)
        self.dist = report.app.build
        self.environment = environment
        self.serverName = report.host.name

        var stacktrace = Self.stacktrace(report.frames, of: report, registers: report.registers)
        if let site = Self.throwSiteFrame(report) { stacktrace.frames.append(site) }
        let thrown = kind.exception(report)
        exception = Values(values: [
            Exception(
                type: thrown.type, value: thrown.value?.isEmpty == false ? thrown.value : nil,
                threadID: Int64(report.thread.id),
                mechanism: Mechanism(
                    type: kind.mechanism, handled: kind.handled,
                    meta: report.signal.map { signal in
                        Mechanism.Meta(
                            signal: .init(
                                number: signal.number, code: signal.code, name: signal.name,
                                codeName: signal.codeName))
                    }),
                stacktrace: stacktrace.frames.isEmpty ? nil : stacktrace)
        ])
        if let threads = report.threads, !threads.isEmpty {
            self.threads = Values(
                values: threads.map { thread in
                    let stack = thread.crashed ? nil : Self.stacktrace(thread.frames, of: report, registers: [])
                    return Thread(
                        id: Int64(thread.id), name: thread.name, crashed: thread.crashed && kind.crashes,
                        current: thread.crashed, stacktrace: stack?.frames.isEmpty == false ? stack : nil)
                })
        }
        let images = report.images.compactMap(Self.image)
        debugMeta = images.isEmpty ? nil : DebugMeta(images: images)
        let crumbs = report.logTail.suffix(Self.maxBreadcrumbs).map(Self.breadcrumb)
        breadcrumbs = crumbs.isEmpty ? nil : Values(values: crumbs)
        contexts = Self.contexts(report)
        var tags = report.annotations ?? [:]
        tags["blackbox.kind"] = report.kind.rawValue
        if let requestID = report.scope?["request-id"] { tags["request_id"] = requestID }
        self.tags = tags
        var extra = report.metadata.mapValues(SentryJSON.string)
        if let path = report.process.path { extra["process.path"] = .string(path) }
        extra["process.pid"] = .string(String(report.process.pid))
        if let fatalMessage = report.fatalMessage { extra["fatal_message"] = .string(fatalMessage) }
        if !report.notes.isEmpty { extra["notes"] = .string(report.notes.joined(separator: "\n")) }
        self.extra = extra
        if let scope = report.scope {
            transaction = scope["route"]
            if scope["method"] != nil || scope["url"] != nil {
                request = Request(method: scope["method"], url: scope["url"])
            }
        }
    }

    /// Ways to make an event smaller, least loss first: Relay refuses events over 1 MiB, and a
    /// report of 256 threads with deep Swift stacks can be larger.
    package enum Trim: CaseIterable {
        case otherThreadsToTheirInnermostFrames, otherThreadsWithoutStacks, fewerBreadcrumbs, noExtra
        case crashedThreadToItsInnermostFrames
    }

    package mutating func trim(_ step: Trim) {
        switch step {
        case .otherThreadsToTheirInnermostFrames:
            for index in threads?.values.indices ?? 0..<0 {
                if let frames = threads?.values[index].stacktrace?.frames, frames.count > 16 {
                    threads?.values[index].stacktrace?.frames = Array(frames.suffix(16))
                }
            }
        case .otherThreadsWithoutStacks:
            for index in threads?.values.indices ?? 0..<0 { threads?.values[index].stacktrace = nil }
        case .fewerBreadcrumbs:
            breadcrumbs = breadcrumbs.map { Values(values: Array($0.values.suffix(20))) }
        case .noExtra:
            extra = ["blackbox.trimmed": .string("the report was larger than a Sentry event may be")]
        case .crashedThreadToItsInnermostFrames:
            for index in exception?.values.indices ?? 0..<0 {
                if let frames = exception?.values[index].stacktrace?.frames, frames.count > 200 {
                    exception?.values[index].stacktrace?.frames = Array(frames.suffix(200))
                }
            }
        }
        var tags = self.tags ?? [:]
        tags["blackbox.trimmed"] = "true"
        self.tags = tags
    }

    init(eventID: String, timestamp: Double, level: String, sdk: SDK) {
        self.eventID = eventID
        self.timestamp = timestamp
        self.level = level
        self.sdk = sdk
    }

    public static let sdkName = "blackbox.swift"
    public static let sdkVersion = BlackboxVersion.current
    /// What every envelope's header names as its sender.
    package static let envelopeSDK = SentryEnvelope.SDK(name: sdkName, version: sdkVersion)
    static let maxBreadcrumbs = 100

    /// Sentry's convention, `package@version+build`; nil without a version (Sentry's release
    /// health needs one).
    public static func release(of app: CrashReport.App) -> String? {
        guard let version = app.version, !version.isEmpty else { return nil }
        return releaseName("\(app.name)@\(version)" + (app.build.map { "+\($0)" } ?? ""))
    }

    /// Sentry refuses a whole event whose release has a slash, a backslash or a control character,
    /// or is longer than 200 characters: such characters become `-`, and the name is cut.
    package static func releaseName(_ text: String) -> String {
        let cleaned = text.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar == "\\" || scalar.properties.generalCategory == .control
                || scalar.properties.isWhitespace ? "-" : Character(scalar)
        }
        return String(String(cleaned).prefix(200))
    }

    /// What each kind of report is called in Sentry.
    enum Kind {
        case crash, nonfatal, hang, error, outOfMemory

        init?(_ report: CrashReport) {
            switch report.kind {
            case .crash: self = .crash
            case .nonfatal: self = .nonfatal
            case .hang: self = .hang
            case .error: self = .error
            case .termination:
                guard report.termination?.cause == "oom-killer" else { return nil }
                self = .outOfMemory
            }
        }

        var level: String {
            switch self {
            case .crash, .outOfMemory: "fatal"
            case .nonfatal, .hang, .error: "error"
            }
        }
        var crashes: Bool { self == .crash || self == .outOfMemory }
        var handled: Bool { !crashes }
        var mechanism: String {
            switch self {
            case .crash: "signalhandler"
            case .nonfatal: "blackbox.assertion"
            case .hang: "AppHang"
            case .error: "blackbox.capture"
            case .outOfMemory: "oom_kill"
            }
        }

        /// A Swift trap is `Fatal error` with its message as the value (`Index out of range`), in a
        /// release build (where only the trap's `Swift runtime failure` marker names it) and a debug
        /// build (where the runtime printed `<file>:<line>: Fatal error: …`) alike, so Sentry files
        /// both under one issue; another crash is its signal with the fatal message. A captured
        /// error is its type.
        func exception(_ report: CrashReport) -> (type: String, value: String?) {
            switch self {
            case .crash:
                if let trap = SwiftTrap(report) { return ("Fatal error", trap.message.isEmpty ? "" : trap.summary) }
                return (report.signal?.name ?? "crash", report.fatalMessage ?? report.reason)
            case .nonfatal: return ("AssertionFailure", report.reason)
            case .hang: return ("AppHang", report.reason)
            case .error: return (report.metadata["error.type"] ?? "Error", report.reason)
            case .outOfMemory: return ("OutOfMemory", "the kernel's OOM killer ended the run")
            }
        }

    }

    /// Oldest first, one Sentry frame per symbol (an inlined function is a frame of its own at the
    /// same address, as Sentry's symbolicator makes them).
    /// A captured error's throw site (`error.site.*`, see `ThrowSite`) as the innermost frame of its
    /// stack: a middleware's capture has none of the app's frames, and Sentry groups by the app's
    /// innermost frame as the collector groups by the site.
    static func throwSiteFrame(_ report: CrashReport) -> Frame? {
        guard report.kind == .error, let file = report.metadata["error.site.file"], !file.isEmpty else {
            return nil
        }
        var frame = Frame()
        frame.function = report.metadata["error.site.function"]
        frame.absPath = file
        frame.filename = String(file.split(separator: "/").last ?? Substring(file))
        frame.lineno = report.metadata["error.site.line"].flatMap { Int($0) }
        frame.inApp = true
        return frame
    }

    static func stacktrace(
        _ frames: [CrashReport.Frame], of report: CrashReport, registers: [CrashReport.Register]
    ) -> Stacktrace {
        var result: [Frame] = []
        for frame in frames.reversed() {
            let image = report.image(of: frame)
            let base = Frame(
                instructionAddr: frame.address, imageAddr: image?.start, package: image?.path,
                stackStart: frame.asyncResume == true ? true : nil)
            if frame.symbols.isEmpty {
                var unnamed = base
                unnamed.inApp = frame.inApp ?? false
                result.append(unnamed)
                continue
            }
            // Symbols are innermost first; Sentry's frames oldest first.
            for symbol in frame.symbols.reversed() {
                var named = base
                named.function = symbol.function
                named.rawFunction = symbol.mangledName
                named.absPath = symbol.file
                named.filename = symbol.file.map { String($0.split(separator: "/").last ?? Substring($0)) }
                named.lineno = symbol.line.flatMap { $0 > 0 ? $0 : nil }
                named.colno = symbol.column.flatMap { $0 > 0 ? $0 : nil }
                named.inApp =
                    frame.inApp
                    ?? InAppRules.isAppSymbol(function: symbol.function, file: symbol.file, imagePath: image?.path)
                result.append(named)
            }
        }
        let named = Dictionary(registers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        return Stacktrace(
            frames: result, registers: named.isEmpty ? nil : named, instructionAddrAdjustment: "all_but_first")
    }

    /// `code_id` is the ELF build-id; `debug_id` Sentry's form of it, which `sentry-cli
    /// debug-files check` prints for the same file.
    static func image(_ image: CrashReport.Image) -> Image? {
        guard let start = UInt64(hex: image.start), let end = UInt64(hex: image.end), end >= start else {
            return nil
        }
        return Image(
            codeID: image.buildID, debugID: image.buildID.flatMap(Image.debugID(ofBuildID:)),
            imageAddr: image.start, imageSize: end - start, codeFile: image.path)
    }

    /// A log line (`LogLine`) as a breadcrumb; a line of another shape is its message whole.
    static func breadcrumb(_ line: String) -> Breadcrumb {
        guard let parts = LogLine(parsing: line) else { return Breadcrumb(category: "log", message: line) }
        return Breadcrumb(
            timestamp: parts.time.timeIntervalSince1970, category: parts.label ?? "log",
            level: breadcrumbLevels[parts.level] ?? "info", message: parts.message)
    }

    /// Blackbox's level tags and Sentry's breadcrumb levels.
    static let breadcrumbLevels = [
        "trace": "debug", "debug": "debug", "info": "info", "note": "info", "notice": "info", "warn": "warning",
        "warning": "warning", "error": "error", "crit": "fatal", "critical": "fatal",
    ]

    static func contexts(_ report: CrashReport) -> [String: [String: SentryJSON]] {
        var contexts: [String: [String: SentryJSON]] = [:]
        var os: [String: SentryJSON] = ["name": .string("Linux")]
        if !report.host.os.isEmpty { os["raw_description"] = .string(report.host.os) }
        if !report.host.kernel.isEmpty { os["kernel_version"] = .string(report.host.kernel) }
        contexts["os"] = os
        var device: [String: SentryJSON] = [:]
        if !report.host.architecture.isEmpty { device["arch"] = .string(report.host.architecture) }
        if !device.isEmpty { contexts["device"] = device }
        var app: [String: SentryJSON] = ["app_name": .string(report.app.name)]
        if let version = report.app.version { app["app_version"] = .string(version) }
        if let build = report.app.build { app["app_build"] = .string(build) }
        if let start = report.process.startTime { app["app_start_time"] = .string(ReportTime.format(start)) }
        contexts["app"] = app
        contexts["runtime"] = ["name": .string("swift")]
        if let scope = report.scope, let trace = scope["trace-id"] {
            var context: [String: SentryJSON] = ["trace_id": .string(trace)]
            if let span = scope["span-id"] { context["span_id"] = .string(span) }
            contexts["trace"] = context
        }
        if let scope = report.scope, !scope.isEmpty {
            contexts["blackbox.scope"] = scope.mapValues { .string($0) }
        }
        if let termination = report.termination {
            var context: [String: SentryJSON] = [
                "cause": .string(termination.cause),
                "last_seen_alive": .string(ReportTime.format(termination.lastSeenAlive)),
            ]
            if let before = termination.cgroupOOMKillsBefore {
                context["cgroup_oom_kills_before"] = .number(Double(before))
            }
            if let after = termination.cgroupOOMKillsAfter {
                context["cgroup_oom_kills_after"] = .number(Double(after))
            }
            contexts["termination"] = context
        }
        return contexts
    }
}

extension UInt64 {
    /// `0x7f00ab12`.
    init?(hex text: String) {
        let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
        self.init(digits, radix: 16)
    }
}
