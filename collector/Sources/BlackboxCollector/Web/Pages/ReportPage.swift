import BlackboxFormat
import Foundation
import Hummingbird

/// `/reports/:id`: one report whole, the app's own frames first, with the debug files it still lacks.
struct ReportPage: PageModel {
    static let template = "report"

    struct Fact: Encodable {
        let name: String
        let value: String
        /// A page this fact leads to (the groups with the same diagnosis).
        var link: String? = nil
    }

    /// Another thread, collapsed, summarized by the first function of the app's own it is in.
    struct Thread: Encodable {
        let id: Int32
        let name: String
        let frameSource: String
        let frameCount: Int
        let top: String?
        let frames: [FrameRow]
        let hasProblem: Bool
        let problem: String
        let hasScope: Bool
        let scope: String
    }

    struct Image: Encodable {
        let start: String
        let end: String
        let buildID: String
        let path: String
    }

    struct MissingDebugFile: Encodable {
        let buildID: String
        let path: String
    }

    let title: String
    let headline: String
    let facts: [Fact]
    let threadID: Int32
    let threadName: String
    let frameSource: String
    let frames: [FrameRow]
    let hasOtherThreads: Bool
    let otherThreadCount: Int
    let otherThreads: [Thread]
    let omitted: String?
    let hasScope: Bool
    let scope: [Fact]
    /// The request's trace, when its scope had one: its log lines carry the id (swift-otel's provider).
    let traceID: String?
    let traceQuery: String?
    let hasAnnotations: Bool
    let annotations: [Fact]
    let hasRegisters: Bool
    let registers: [Fact]
    let hasImages: Bool
    let images: [Image]
    let hasAddresses: Bool
    let hasLogTail: Bool
    let logTail: [String]
    let hasNotes: Bool
    let notes: [String]
    /// Nil, not empty, when there is none: release builds keep none.
    let fatalMessage: String?
    let hasMissingSymbols: Bool
    /// Images whose frames lack debug-info names and whose debug file the store does not have.
    let missingSymbols: [MissingDebugFile]
    let groupID: Int64
    let bundleID: Int64
    let reportID: Int64

    static func routes(store: any CollectorStore, symbolBlobs: any BlobStorage, pages: PageRenderer)
        -> RouteCollection<AuthenticatedContext>
    {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("reports/:id") { _, context in
            guard var stored = try await store.report(id: try context.id(), in: context.scope) else {
                return pages.notFound()
            }
            stored.report = await SourceContexts(index: store, blobs: symbolBlobs).filled(
                stored.report, in: context.scope)
            let unresolved = ReportSymbols.imagesLackingDebugInfo(stored.report)
            let archived = try await store.symbolFiles(buildIDs: unresolved, in: context.scope).filter(\.hasDebugInfo)
            let missing = unresolved.filter { id in !archived.contains { $0.buildID == id } }
            return pages.render(
                ReportPage(
                    stored,
                    missingSymbols: missing.map { buildID in
                        MissingDebugFile(
                            buildID: buildID, path: stored.report.images.first { $0.buildID == buildID }?.path ?? "")
                    }))
        }
        return routes
    }

    init(_ stored: StoredReport, missingSymbols: [MissingDebugFile]) {
        let report = stored.report
        let appCode = AppCode(report)
        title = report.reason ?? report.signal?.name ?? report.kind.rawValue
        headline = CrashSignature.headline(report)
        facts = Self.facts(stored)
        threadID = report.thread.id
        threadName = report.thread.name ?? ""
        frameSource = report.frameSource
        frames = FrameRow.rows(report.frames, in: report, appCode: appCode)
        otherThreads = (report.threads?.dropFirst() ?? []).map { thread in
            let scope = thread.scope ?? [:]
            return Thread(
                id: thread.id, name: thread.name ?? "", frameSource: thread.frameSource,
                frameCount: thread.frames.count,
                top: appCode.culprit(in: thread.frames).map { SwiftNames.simplified($0.function) }
                    ?? thread.frames.first?.symbols.last.map { SwiftNames.simplified($0.function) },
                frames: FrameRow.rows(thread.frames, in: report, appCode: appCode),
                hasProblem: thread.problem != nil, problem: thread.problem ?? "", hasScope: !scope.isEmpty,
                scope: scope.keys.sorted().map { "\($0) \(scope[$0] ?? "")" }.joined(separator: ", "))
        }
        hasOtherThreads = !otherThreads.isEmpty
        otherThreadCount = otherThreads.count
        omitted = report.omittedFrames.map { "\($0.count) frames omitted after frame \($0.omittedAfterIndex)" }
        scope = Self.sorted(report.scope ?? [:])
        hasScope = !scope.isEmpty
        let trace = report.scope?["trace-id"].flatMap { $0.isEmpty ? nil : $0 }
        traceID = trace
        traceQuery = trace.map { $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        annotations = Self.sorted(report.annotations ?? [:])
        hasAnnotations = !annotations.isEmpty
        registers = report.registers.map { Fact(name: $0.name, value: $0.value) }
        hasRegisters = !registers.isEmpty
        images = report.images.map { Image(start: $0.start, end: $0.end, buildID: $0.buildID ?? "", path: $0.path) }
        hasImages = !images.isEmpty
        hasAddresses = FrameRow.hasAddresses(report)
        logTail = report.logTail
        hasLogTail = !logTail.isEmpty
        notes = report.notes
        hasNotes = !notes.isEmpty
        fatalMessage = report.fatalMessage.flatMap { $0.isEmpty ? nil : $0 }
        self.missingSymbols = missingSymbols
        hasMissingSymbols = !missingSymbols.isEmpty
        groupID = stored.groupID
        bundleID = stored.bundleID
        reportID = stored.id
    }

    private static func sorted(_ values: [String: String]) -> [Fact] {
        values.sorted { $0.key < $1.key }.map { Fact(name: $0.key, value: $0.value) }
    }

    private static func facts(_ stored: StoredReport) -> [Fact] {
        let report = stored.report
        // What the crash most likely was comes first: it is what a reader wants before the details.
        var facts =
            report.diagnosis.map {
                [Fact(name: "Diagnosis", value: $0.summary, link: "/?diagnosis=\($0.kind.rawValue)")]
            } ?? []
        facts += [
            Fact(name: "Kind", value: report.kind.rawValue + (report.partial ? " (partial)" : "")),
            Fact(
                name: "App",
                value: [report.app.name, report.app.version, report.app.build.map { "(\($0))" }].compactMap { $0 }
                    .joined(separator: " ")),
            Fact(name: "Host", value: "\(report.host.name), \(report.host.os), \(report.host.architecture)"),
            Fact(name: "Time", value: iso(report.process.crashTime)),
        ]
        // An event through the Sentry protocol knows no process; an interpreted language's, no platform
        // but its own.
        if report.process.pid != 0 || report.process.path != nil {
            facts.append(Fact(name: "Process", value: "\(report.process.pid) \(report.process.path ?? "")"))
        }
        if let platform = report.metadata["sentry.platform"] {
            facts.append(Fact(name: "Platform", value: "\(platform) (through the Sentry protocol)"))
        }
        if let signal = report.signal {
            facts.append(
                Fact(
                    name: "Signal",
                    value: "\(signal.name) (\(signal.number)), code \(signal.code) \(signal.codeName ?? "")"
                ))
            facts.append(
                Fact(name: "Fault address", value: signal.faultAddress + (signal.access.map { " (\($0))" } ?? "")))
            if let memory = signal.faultMemory { facts.append(Fact(name: "Fault memory", value: memory.summary)) }
            if let memory = signal.stackMemory { facts.append(Fact(name: "Stack memory", value: memory.summary)) }
        }
        if let reason = report.reason { facts.append(Fact(name: "Reason", value: reason)) }
        if let site = CrashSignature.ThrowSite(report) {
            let function = site.function.isEmpty ? "" : " in \(site.function)"
            let from = report.metadata["error.site.from"].map { " (\(throwSiteOrigin($0)))" } ?? ""
            facts.append(Fact(name: "Thrown at", value: site.location + function + from))
        }
        if let termination = report.termination {
            facts.append(Fact(name: "Cause", value: termination.cause))
            facts.append(
                Fact(
                    name: "Died between",
                    value: "\(iso(termination.lastSeenAlive)) (last sign of life) and \(iso(termination.detectedAt))"))
        }
        if let symbols = report.symbolicationSummary { facts.append(Fact(name: "Symbols", value: symbols)) }
        if let symbolication = stored.symbolication {
            facts.append(Fact(name: "Symbolication here", value: describe(symbolication, report: report)))
        }
        return facts
    }

    /// Where the collector's symbolication of a report stands, in words.
    static func describe(_ symbolication: ReportSymbolication, report: CrashReport) -> String {
        switch symbolication.state {
        case .pending:
            symbolication.attempts == 0
                ? "waiting"
                : "waiting (\(symbolication.attempts) failed attempt\(symbolication.attempts == 1 ? "" : "s"))"
        case .missing:
            // Images without debug files, but none of their frames left unnamed (their symbol tables
            // named them): nothing to wait for.
            report.stacks.joined().contains { $0.symbols.isEmpty && $0.imageIndex != nil }
                ? "done with the debug files uploaded so far; waiting for the missing ones" : "done"
        case .done: "done"
        case .failed: "failed: \(symbolication.failure ?? "no reason recorded")"
        }
    }

    /// How the library learned a throw site (`error.site.from`), in words.
    private static func throwSiteOrigin(_ origin: String) -> String {
        switch origin {
        case "error": "where the error was made"
        case "thrown": "marked with Blackbox.thrown"
        case "logged": "where the app logged it"
        default: "unknown"
        }
    }
}
