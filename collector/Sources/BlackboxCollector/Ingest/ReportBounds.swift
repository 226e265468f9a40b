import BlackboxFormat

/// What one stored report may hold, whatever format brought it: frames, threads, the frames of all
/// threads together, images, and its stored JSON's size. Applied by `IngestPlan`, which every format
/// builds, so that a new format cannot skip them (the Sentry format first had none: one 2 MB event of
/// 256 threads of 256 frames cost 42 s of CPU, security review 2026-11-27, findings 6 and 7). The
/// counts are the crash handler's own (`RawCrashReport.Limits`): a report Blackbox wrote is never cut.
/// A format may cut earlier while converting (what it reads is then bounded too).
struct ReportBounds: Sendable {
    var maxReportBytes: Int
    /// The stored JSON of all reports of one upload together.
    var maxReportBytesPerUpload: Int

    /// The failing thread's frames (in `frames`, and again as the crashed thread of `threads`).
    static let maxFrames = RawCrashReport.Limits.frames
    /// The failing thread and the others the crash handler keeps.
    static let maxThreads = RawCrashReport.Limits.threads + 1
    /// Each other thread's frames.
    static let maxThreadFrames = RawCrashReport.Limits.threadFrames
    /// The other threads' frames together: 512 threads of 256 frames would be 131,072 frames to group
    /// and symbolicate (the crash handler's assembler keeps 6,000).
    static let maxAllThreadFrames = 8_192
    static let maxImages = RawCrashReport.Limits.images

    /// Cuts what is past the counts (a note says so); returns whether anything was cut.
    @discardableResult
    static func cut(_ report: inout CrashReport) -> Bool {
        var cut: [String] = []
        if report.frames.count > maxFrames {
            let left = report.frames.count - maxFrames
            if report.omittedFrames == nil {
                report.omittedFrames = .init(omittedAfterIndex: maxFrames - 1, count: left)
            }
            report.frames.removeLast(left)
            cut.append("\(left) frames")
        }
        if var threads = report.threads {
            if threads.count > maxThreads {
                cut.append("\(threads.count - maxThreads) threads")
                threads.removeLast(threads.count - maxThreads)
            }
            var framesLeft = maxAllThreadFrames
            var threadFramesCut = 0
            for index in threads.indices {
                let crashed = threads[index].crashed
                let keep = min(threads[index].frames.count, crashed ? maxFrames : min(maxThreadFrames, framesLeft))
                if keep < threads[index].frames.count {
                    threadFramesCut += threads[index].frames.count - keep
                    threads[index].frames.removeLast(threads[index].frames.count - keep)
                    threads[index].problem = threads[index].problem ?? "truncated"
                }
                if !crashed { framesLeft -= keep }
            }
            if threadFramesCut > 0 { cut.append("\(threadFramesCut) frames of other threads") }
            report.threads = threads
        }
        if report.images.count > maxImages {
            cut.append("\(report.images.count - maxImages) images")
            report.images.removeLast(report.images.count - maxImages)
        }
        guard !cut.isEmpty else { return false }
        report.notes.append("the collector kept what its bounds allow: \(cut.joined(separator: ", ")) left out")
        return true
    }

    /// Refuses a report whose stored JSON is too large, alone or with the upload's others.
    func check(json: Int, storedBefore: Int, path: String) throws(APIError) {
        guard json <= maxReportBytes else {
            throw .invalidReport(path, "its report is larger than \(maxReportBytes) bytes")
        }
        guard storedBefore + json <= maxReportBytesPerUpload else {
            throw .reportsTooLarge(limit: maxReportBytesPerUpload)
        }
    }
}

extension ReportBounds {
    init(_ limits: IngestLimits) {
        self.init(maxReportBytes: limits.maxReportBytes, maxReportBytesPerUpload: limits.maxReportBytesPerBundle)
    }
}
