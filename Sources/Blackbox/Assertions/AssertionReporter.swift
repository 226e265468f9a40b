import BlackboxFormat
import Runtime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Writes `nonfatal` reports for failed assertions to one core's outbox: the same JSON as crash
/// reports, with a backtrace captured and symbolicated in-process by Swift's `Runtime` module
/// (demangled names, inlined frames, file:line). The running `BlackboxRuntime` owns one.
struct AssertionReporter: Sendable {
    let core: LoggingCore

    /// The running runtime's reporter, or else one for the only core an app or tool built itself
    /// (nil when there is neither: the failure is then only logged).
    static var current: AssertionReporter? {
        Blackbox.current?.assertions ?? LoggingCore.onlyRunning.map(AssertionReporter.init)
    }

    /// Captures the caller's backtrace and writes the report to `current`'s outbox, if any; returns
    /// the backtrace as text for the log line either way.
    @discardableResult
    static func report(_ failure: AssertionFailure, suppressed: Int) -> String {
        let backtrace = captureBacktrace()
        current?.write(failure, suppressed: suppressed, backtrace: backtrace)
        return backtrace.text
    }

    func write(
        _ failure: AssertionFailure, suppressed: Int,
        backtrace: (frames: [CrashReport.Frame], images: [CrashReport.Image], text: String)
    ) {
        write(
            kind: .nonfatal, reason: failure.summary,
            metadata: [
                "assertion": failure.kind.rawValue, "location": failure.location, "level": failure.level.rawValue,
            ], suppressed: suppressed,
            backtrace: backtrace)
    }

    /// A non-fatal report (a failed assertion, a captured error) of the calling thread, with the
    /// current task's scope.
    func write(
        kind: CrashReport.Kind, reason: String, metadata: [String: String], suppressed: Int,
        backtrace: (frames: [CrashReport.Frame], images: [CrashReport.Image], text: String)
    ) {
        let (frames, images) = (backtrace.frames, backtrace.images)
        let configuration = core.configuration
        var report = CrashReport(
            kind: kind,
            app: .init(name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild),
            host: CrashCapture.currentHost(),
            process: .init(
                pid: getpid(), path: CrashCapture.executablePath(),
                startTime: CrashCapture.processStartTime().map { Date(timeIntervalSince1970: $0) }, crashTime: Date()),
            thread: .init(id: Int32(bitPattern: currentThreadID()), name: Self.currentThreadName()))
        report.reason = reason
        report.frames = frames
        report.images = images
        report.frameSource = "runtime"
        report.symbolicated = frames.contains { !$0.symbols.isEmpty }
        report.logTail = core.recentLines(configuration.crashReporting.logTailLines)
        report.metadata = configuration.crashReporting.metadata.merging(metadata) { _, new in new }
        let annotations = CrashAnnotations.current
        report.annotations = annotations.isEmpty ? nil : annotations
        report.scope = Blackbox.scope?.reportScope
        if suppressed > 0 { report.notes.append("\(suppressed) more failures at this call site since the last report") }
        do {
            let path = try Outbox(DiagnosticsDirectory(configuration.directory)).write(report)
            core.announcements.announce(.reportWritten(path: path))
        } catch {
            InternalDiagnostics.report("cannot write a \(kind.rawValue) report: \(error)", key: "nonfatal-write")
        }
    }

    static func captureBacktrace() -> (frames: [CrashReport.Frame], images: [CrashReport.Image], text: String) {
        guard let captured = try? Backtrace.capture(limit: 128),
            let symbolicated = captured.symbolicated(with: nil, options: [.showInlineFrames, .showSourceLocations])
        else { return ([], [], "(no backtrace)") }
        let imageMap = symbolicated.images
        let images = imageMap.map { image in
            let base = UInt64(image.baseAddress) ?? 0
            return CrashReport.Image(
                path: image.path ?? image.name ?? "?", bias: hex(base), start: hex(base),
                end: hex(UInt64(image.endOfText) ?? 0),
                buildID: image.uniqueID.map(lowercaseHex))
        }
        // Symbolicated frames list inlined frames first, then the real frame they belong to.
        var frames: [CrashReport.Frame] = []
        var pending: [CrashReport.Symbol] = []
        for frame in symbolicated.frames {
            if let symbol = frame.symbol {
                pending.append(
                    CrashReport.Symbol(
                        function: symbol.name, mangledName: symbol.rawName == symbol.name ? nil : symbol.rawName,
                        file: symbol.sourceLocation?.path, line: symbol.sourceLocation?.line,
                        column: symbol.sourceLocation?.column, inlined: frame.inlined))
            }
            if frame.inlined { continue }
            if frame.captured.originalProgramCounter.isNull {
                pending = []
                continue
            }
            let address = UInt64(frame.captured.originalProgramCounter) ?? 0
            var entry = CrashReport.Frame(
                index: frames.count, address: hex(address), symbols: pending,
                symbolication: pending.isEmpty ? nil : pending.contains { $0.file != nil } ? .debugInfo : .symbolTable)
            if let index = imageMap.indexOfImage(at: frame.captured.originalProgramCounter) {
                entry.imageIndex = index
                entry.imageOffset = hex(address &- (UInt64(imageMap[index].baseAddress) ?? 0))
            }
            frames.append(entry)
            pending = []
        }
        // Leave out the frames of the assertion machinery itself: the report starts at the caller.
        let machinery = ["AssertionReporter.", "AssertionFailure.", "ErrorCapture.", "Blackbox.capture("]
        let entryPoints = ["ensure(_:_:level:file:", "bug(_:level:file:", "unreachable(_:file:"]
        func isMachinery(_ name: String) -> Bool {
            machinery.contains { name.contains($0) }
                || entryPoints.contains { name.hasPrefix($0) || name.contains(".\($0)") }
        }
        if let caller = frames.firstIndex(where: { frame in
            !frame.symbols.contains { isMachinery($0.function) }
        }), caller > 0 {
            frames = Array(frames[caller...]).enumerated().map { index, frame in
                var frame = frame
                frame.index = index
                return frame
            }
        }
        let text = frames.prefix(32).map { frame in
            let symbol = frame.symbols.last
            let location = symbol?.file.map { " at \($0):\(symbol?.line ?? 0)" } ?? ""
            return "  \(frame.index) \(frame.address) \(symbol?.function ?? "?")\(location)"
        }.joined(separator: "\n")
        return (frames, images, text)
    }

    private static func currentThreadName() -> String? {
        guard let bytes = DurableFile.read("/proc/thread-self/comm", limit: 64) else { return nil }
        let name = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
        return name?.isEmpty == false ? name : nil
    }
}
