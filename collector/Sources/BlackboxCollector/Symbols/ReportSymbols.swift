import BlackboxFormat

/// What symbolicating a stored report from the symbol store means, in plain Swift (the stores only
/// record its results): which images' frames still lack debug-info names, what to ask the symbolizer
/// for them, and the report once their symbols are in.
enum ReportSymbols {
    /// An image (by build-id) that frames of a report point into; `resolved` once all those frames
    /// have debug-info names.
    struct ImageUse: Sendable, Equatable {
        var buildID: String
        var resolved: Bool
    }

    /// A frame of one of the report's `stacks`: 0 is the crashed thread's (`frames`), then the other
    /// threads' in `threads` order.
    struct FramePosition: Hashable, Sendable {
        var stack: Int
        var frame: Int
    }

    /// One row per build-id that frames of any thread point into, in frame order.
    static func imageUses(_ report: CrashReport) -> [ImageUse] {
        var uses: [ImageUse] = []
        for frame in report.stacks.joined() where !isStartFileCode(frame) {
            guard let buildID = buildID(of: frame, in: report) else { continue }
            let resolved = hasDebugInfoNames(frame)
            if let index = uses.firstIndex(where: { $0.buildID == buildID }) {
                uses[index].resolved = uses[index].resolved && resolved
            } else {
                uses.append(ImageUse(buildID: buildID, resolved: resolved))
            }
        }
        return uses
    }

    /// The build-ids of images none of whose frames has debug-info names: the ones a debug file would
    /// help. An image with some named frames has its debug info already; its unnamed ones are code
    /// without any (`_start`, C runtime objects), which no upload would name.
    static func imagesLackingDebugInfo(_ report: CrashReport) -> [String] {
        imageUses(report).map(\.buildID).filter { buildID in
            !report.stacks.joined().contains { self.buildID(of: $0, in: report) == buildID && hasDebugInfoNames($0) }
        }
    }

    /// Code the linker adds from the C runtime's start files (crt1.o, crti.o, crtbegin.o): no build
    /// has debug info for it, so it never makes its image wait for, or miss, a debug file (an app
    /// with full DWARF was listed as missing debug files because of its `_start`).
    static func isStartFileCode(_ frame: CrashReport.Frame) -> Bool {
        !frame.symbols.isEmpty && frame.symbols.allSatisfy { startFileFunctions.contains($0.function) }
    }

    static let startFileFunctions: Set<String> = [
        "_start", "_init", "_fini", "__libc_csu_init", "__libc_csu_fini", "frame_dummy", "register_tm_clones",
        "deregister_tm_clones", "__do_global_dtors_aux",
    ]

    /// Names from DWARF already (older reports do not say how; a file:line means debug info).
    static func hasDebugInfoNames(_ frame: CrashReport.Frame) -> Bool {
        switch frame.symbolication {
        case .debugInfo: true
        case .symbolTable: false
        case nil: frame.symbols.contains { $0.file != nil }
        }
    }

    static func buildID(of frame: CrashReport.Frame, in report: CrashReport) -> String? {
        guard let image = report.image(of: frame) else { return nil }
        guard !image.path.hasPrefix("["), let buildID = image.buildID, !buildID.isEmpty else { return nil }
        return buildID
    }

    /// The frames of `buildID`'s image that lack debug-info names, in every thread, with the address
    /// to look up in its debug file: the link-time address (`address - bias`), at `pc - 1` for return
    /// addresses (every frame but a thread's first) so that it lands inside the call and on its line.
    static func lookups(in report: CrashReport, buildID: String) -> [(frame: FramePosition, address: UInt64)] {
        report.stacks.enumerated().flatMap { stack, frames in
            frames.indices.compactMap { position -> (frame: FramePosition, address: UInt64)? in
                let frame = frames[position]
                guard self.buildID(of: frame, in: report) == buildID, !hasDebugInfoNames(frame),
                    let imageIndex = frame.imageIndex, let address = hexValue(frame.address),
                    let bias = hexValue(report.images[imageIndex].bias)
                else { return nil }
                return (FramePosition(stack: stack, frame: position), (address &- bias) &- frame.lookupAdjustment)
            }
        }
    }

    /// The report with debug-info names for the frames given, marked as such; the `Swift runtime
    /// failure: …` reason when the crashed thread's first frame now names one; a note saying which
    /// file named them.
    /// Bytes of a function or file name, and inlined frames per frame, taken from the symbolizer.
    static let maxSymbolBytes = 4 << 10
    static let maxInlinedSymbols = 64

    static func applying(
        _ symbols: [FramePosition: [CrashReport.Symbol]], from fileName: String, buildID: String, to report: CrashReport
    ) -> CrashReport {
        var report = report
        var stacks = report.stacks
        var named = 0
        for (position, frameSymbols) in symbols
        where stacks.indices.contains(position.stack) && stacks[position.stack].indices.contains(position.frame)
            && !frameSymbols.isEmpty
        {
            // What llvm-symbolizer prints comes from an uploaded debug file: as bounded as any field
            // of an uploaded report (a hostile file could name a function with megabytes).
            stacks[position.stack][position.frame].symbols = frameSymbols.prefix(maxInlinedSymbols).map { symbol in
                var bounded = symbol
                bounded.function = String(symbol.function.utf8.prefix(maxSymbolBytes)) ?? ""
                bounded.file = symbol.file.map { String($0.utf8.prefix(maxSymbolBytes)) ?? "" }
                return bounded
            }
            stacks[position.stack][position.frame].symbolication =
                frameSymbols.contains { $0.file != nil } ? .debugInfo : .symbolTable
            named += 1
        }
        guard named > 0 else { return report }
        for (stack, frames) in stacks.enumerated() { report.setFrames(frames, ofStack: stack) }
        report.symbolicated = true
        if let failure = report.frames.first?.symbols.first(where: { $0.function.hasPrefix("Swift runtime failure: ") })
        {
            report.reason = failure.function
        }
        report.notes.append(
            "\(named) frame\(named == 1 ? "" : "s") symbolicated by the collector from \(fileName) (build-id \(buildID))"
        )
        return report
    }

    private static func hexValue(_ text: String) -> UInt64? {
        UInt64(text.hasPrefix("0x") ? text.dropFirst(2) : text[...], radix: 16)
    }
}
