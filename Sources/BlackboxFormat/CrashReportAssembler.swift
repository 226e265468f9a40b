#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Turns a parsed raw report into a `CrashReport` without reading any file: the facts, frames with
/// their images and offsets, every thread, and the notes on what the capture missed. Naming the frames
/// is the caller's, with whatever symbols it has: the crashing machine's next launch
/// (`CrashReportBuilder`: the images on disk) or the collector (its symbol store, for a raw report
/// delivered at crash time).
public struct CrashReportAssembler: Sendable {
    /// Frames kept of all the other threads together; past it, each thread keeps its innermost share.
    public var otherThreadFrameBudget = 6_000

    public init() {}

    /// The report, unsymbolicated. `functionName(image, offset)` names a frame-pointer frame for the
    /// choice of Swift async callers (see `withAsyncCallers`); without it the report has none.
    public func assemble(
        _ raw: RawCrashReport, functionName: ((_ imageIndex: Int, _ offset: UInt64) -> String?)? = nil
    ) -> CrashReport {
        let crashTime = raw.timeSeconds.map {
            Date(timeIntervalSince1970: Double($0) + Double(raw.timeNanoseconds) / 1e9)
        }
        var report = CrashReport(
            kind: .crash,
            app: .init(
                name: raw.header["app"] ?? "unknown", version: raw.header["app-version"], build: raw.header["app-build"]
            ),
            host: .init(
                name: raw.header["host"] ?? "", os: raw.header["os"] ?? "", kernel: raw.header["kernel"] ?? "",
                architecture: raw.header["arch"] ?? ""),
            process: .init(
                pid: raw.pid ?? 0, path: raw.header["exe"],
                startTime: raw.header["start-time"].flatMap(Double.init).map { Date(timeIntervalSince1970: $0) },
                crashTime: crashTime ?? Date()),
            thread: .init(id: raw.threadID ?? 0, name: raw.threadName))
        report.metadata = raw.metadata
        report.annotations = raw.annotations.isEmpty ? nil : raw.annotations
        report.scope = raw.scope.isEmpty ? nil : raw.scope
        if raw.scopeLookedUp, raw.scope.isEmpty {
            report.notes.append(
                "the crashed thread was in no scope (no Blackbox.withScope around the code that crashed)")
        }
        if let number = raw.signal {
            let code = raw.code ?? 0
            report.signal = .init(
                number: number, name: raw.signalName ?? "SIG\(number)", code: code,
                codeName: SignalCodeNames.name(signal: number, code: code),
                faultAddress: hex(raw.faultAddress ?? 0), senderPID: raw.senderPID)
            report.signal?.access = raw.faultAccess
            report.signal?.faultMemory = raw.neighbourhood("fault")
            report.signal?.stackMemory = raw.neighbourhood("stack")
        }
        report.fatalMessage = raw.fatalMessage
        report.registers = raw.registers.map { .init(name: $0.name, value: hex($0.value)) }
        report.images = raw.images.map {
            .init(
                path: $0.path, bias: hex($0.bias), start: hex($0.start), end: hex($0.end),
                buildID: $0.buildID)
        }

        // The libunwind walk (DWARF CFI) is the better one when it finished; the frame-pointer walk is
        // the fallback when libunwind was missing, blocked or faulted.
        let addresses: [UInt64]
        if raw.unwindStatus != nil, raw.unwindFrames.count > 1 || raw.framePointerFrames.count <= 1 {
            addresses = raw.unwindFrames
            report.frameSource = "libunwind"
            if let omission = raw.unwindOmission, omission.count > 0 {
                report.omittedFrames = .init(omittedAfterIndex: omission.after - 1, count: omission.count)
            }
        } else {
            addresses = raw.framePointerFrames
            report.frameSource = "frame-pointers"
        }
        // Built once: a report may list 4,096 images and hundreds of threads.
        let images = RawImages(images: raw.images, ranges: ImageRanges(raw.images.map { ($0.start, $0.end) }))
        report.frames = frames(addresses, in: images)
        if let functionName {
            report.frames = withAsyncCallers(report.frames, raw: raw, images: images, functionName: functionName)
        }
        report.threads = threads(from: raw, crashed: report, images: images)

        notePartialness(of: raw, in: &report)
        noteThreadCapture(of: raw, in: &report)
        return report
    }

    /// What follows from the frames' names, once they have them: the reason (`Swift runtime failure:
    /// …` from the innermost frame, else the fatal message's first line) and the Swift concurrency notes.
    public static func finish(_ report: inout CrashReport) {
        noteSwiftConcurrency(in: &report)
        report.reason = reason(for: report)
    }

    /// The raw report's images and the lookup over their address ranges.
    private struct RawImages {
        let images: [RawCrashReport.Image]
        let ranges: ImageRanges
        func index(containing address: UInt64) -> Int? { ranges.index(containing: address) }
    }

    private func frames(_ addresses: [UInt64], in images: RawImages) -> [CrashReport.Frame] {
        addresses.enumerated().map { index, address in
            var frame = CrashReport.Frame(index: index, address: hex(address))
            if let imageIndex = images.index(containing: address) {
                frame.imageIndex = imageIndex
                frame.imageOffset = hex(address &- images.images[imageIndex].bias)
            }
            return frame
        }
    }

    /// The Swift async callers after the frame they awaited: the first candidate chain whose frame is
    /// an async partial function (`(1) suspend resume partial function for …`, by its name: the handler
    /// cannot tell), inserted after the same address in `frames`.
    private func withAsyncCallers(
        _ frames: [CrashReport.Frame], raw: RawCrashReport, images: RawImages,
        functionName: (Int, UInt64) -> String?
    ) -> [CrashReport.Frame] {
        for candidate in raw.asyncCandidates where raw.framePointerFrames.indices.contains(candidate.frame) {
            let address = raw.framePointerFrames[candidate.frame]
            guard let position = frames.firstIndex(where: { UInt64($0.address.dropFirst(2), radix: 16) == address }),
                let imageIndex = frames[position].imageIndex
            else { continue }
            let offset = (address &- raw.images[imageIndex].bias) &- frames[position].lookupAdjustment
            guard let name = functionName(imageIndex, offset), name.contains("resume partial function for") else {
                continue
            }
            let callers = candidate.resumes.map { resume -> CrashReport.Frame in
                var frame = self.frames([resume], in: images)[0]
                frame.asyncResume = true
                return frame
            }
            var result = Array(frames[...position]) + callers + frames[(position + 1)...]
            for index in result.indices { result[index].index = index }
            return result
        }
        return frames
    }

    /// The crashed thread first (its frames are the report's), then the others in the order the
    /// capture listed them; nil when the raw report has no capture of the other threads.
    private func threads(from raw: RawCrashReport, crashed report: CrashReport, images: RawImages)
        -> [CrashReport.ThreadStack]?
    {
        guard raw.threadCaptureNanoseconds != nil || !raw.otherThreads.isEmpty else { return nil }
        let crashed = CrashReport.ThreadStack(
            id: report.thread.id, name: report.thread.name, crashed: true, frameSource: report.frameSource,
            frames: report.frames)
        // A symbolicated frame is about 0.5 KB of JSON: the budget keeps a report of hundreds of deep
        // threads well under a collector's per-report limit (8 MiB by default).
        let total = raw.otherThreads.reduce(0) { $0 + $1.frames.count }
        let perThread =
            total <= otherThreadFrameBudget
            ? Int.max : max(16, otherThreadFrameBudget / max(1, raw.otherThreads.count))
        return [crashed]
            + raw.otherThreads.map { thread in
                let kept = Array(thread.frames.prefix(perThread))
                let truncated = thread.truncated || kept.count < thread.frames.count
                return CrashReport.ThreadStack(
                    id: thread.id, name: thread.name, crashed: false, frameSource: thread.walk,
                    problem: thread.status != "ok" ? thread.status : truncated ? "truncated" : nil,
                    scope: thread.scope.isEmpty ? nil : thread.scope, frames: frames(kept, in: images))
            }
    }

    private func noteThreadCapture(of raw: RawCrashReport, in report: inout CrashReport) {
        if let reason = raw.threadsUnavailable {
            report.notes.append("the other threads were not captured (\(reason))")
        } else if raw.threadCaptureNanoseconds == nil {
            report.notes.append("no capture of the other threads in the raw report")
        }
        if let nanoseconds = raw.threadCaptureNanoseconds {
            report.notes.append(
                "\(raw.otherThreads.count) other threads captured in \(nanoseconds / 1000) µs")
        }
        if raw.omittedThreads > 0 {
            report.partial = true
            report.notes.append("\(raw.omittedThreads) more threads than the capture keeps were left out")
        }
        let silent = raw.otherThreads.filter { $0.status != "ok" }
        if !silent.isEmpty {
            report.notes.append(
                "threads without a stack: "
                    + silent.map { "\($0.id)\($0.name.map { " \"\($0)\"" } ?? "") (\($0.status))" }.joined(
                        separator: ", "))
        }
    }

    private func notePartialness(of raw: RawCrashReport, in report: inout CrashReport) {
        if !raw.complete {
            report.partial = true
            report.notes.append("the raw report ends early: the process died while writing it")
        }
        if raw.watchdogFired {
            report.partial = true
            report.notes.append("the handler's watchdog fired (a stack walk blocked, probably on the loader lock)")
        }
        for fault in raw.nestedFaults {
            report.partial = true
            report.notes.append("the handler faulted while writing a section: \(fault)")
        }
        if let duration = raw.header["handler-duration-ns"].flatMap(Int.init) {
            report.notes.append("the signal handler took \(duration / 1000) µs to write the raw report (before fsync)")
        }
        if raw.droppedLines > 0 {
            report.partial = true
            report.notes.append("\(raw.droppedLines) lines past what a signal handler writes were ignored")
        }
        switch raw.header["log-writer"] {
        case "timed-out":
            report.notes.append(
                "the log writer had not written every line logged before the crash to the console, stdout or journald within 250 ms; the log file gets them from the journal at the next start, and the log tail below has them"
            )
        case "crashed":
            report.notes.append(
                "the crash was on the log writer's thread: the lines it had not written yet reached no console, stdout or journald; the log file gets them from the journal at the next start, and the log tail below has them"
            )
        default: break
        }
        if let delivery = raw.header["delivery"] {
            report.notes.append("crash-time delivery did not complete (\(delivery)); sent from the next launch instead")
        }
        if raw.unwindStatus == nil { report.notes.append("no libunwind walk in the raw report") }
        if raw.unwindStatus == "unavailable" {
            report.notes.append("libunwind was not available to the crashed process")
        }
        if !raw.lateImages.isEmpty {
            report.notes.append(
                "images loaded after install (no build-id recorded): "
                    + raw.lateImages.map { "\($0.path) at \(hex($0.base))" }.joined(separator: ", "))
        }
    }

    /// A cooperative-pool worker has a libdispatch name (`…root.default-qos`); what it is, its frames
    /// say: it runs jobs through `swift_job_run`.
    private static func noteSwiftConcurrency(in report: inout CrashReport) {
        let worker = report.frames.contains { $0.symbols.contains { $0.function == "swift_job_run" } }
        if worker {
            let name = report.thread.name.map { " \"\($0)\"" } ?? ""
            report.notes.append(
                "the crashed thread \(report.thread.id)\(name) is a Swift concurrency cooperative-pool worker (it runs swift_job_run)"
            )
        }
        if report.frames.contains(where: { $0.asyncResume == true }) {
            report.notes.append("frames marked [async] are the Swift async callers that awaited the frame above them")
        }
    }

    private static func reason(for report: CrashReport) -> String? {
        if let failure = report.frames.first?.symbols.first(where: { $0.function.hasPrefix("Swift runtime failure: ") })
        {
            return failure.function
        }
        if let message = report.fatalMessage?.split(separator: "\n").first { return String(message) }
        return nil
    }

}
