import BlackboxFormat
import BlackboxSymbols

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// Turns a parsed raw report into the shared `CrashReport` on the crashing machine: the
/// assembler's report, named from the images on disk (llvm-symbolizer where installed, the images'
/// symbol tables otherwise), with the log lines the report carries.
struct CrashReportBuilder {
    var symbolicator: Symbolicator?
    var logTailLines = 50
    var assembler = CrashReportAssembler()

    func build(from raw: RawCrashReport) -> CrashReport {
        var symbolTables: [Int: ELFSymbolTable?] = [:]
        var report = assembler.assemble(raw) { imageIndex, offset in
            if symbolTables[imageIndex] == nil {
                symbolTables[imageIndex] = .some(ELFSymbolTable(path: raw.images[imageIndex].path))
            }
            return symbolTables[imageIndex]??.symbol(at: offset)?.function
        }
        if let start = raw.journalStart {
            report.logTail = JournalTail.lines(bytes: raw.journalBytes, startPosition: start, limit: logTailLines)
        }
        symbolicate(&report, images: raw.images.map { ImageOnDisk(path: $0.path, bias: $0.bias, buildID: $0.buildID) })
        CrashReportAssembler.finish(&report)
        return report
    }

    /// An image a report's frames point into, as the process had it mapped.
    struct ImageOnDisk {
        var path: String
        var bias: UInt64
        var buildID: String?
    }

    /// llvm-symbolizer where it is installed (debug info: file:line, inlined frames); every frame it
    /// cannot name, or all of them where it is missing, from the image's own symbol table. `images`
    /// are the ones the frames' `imageIndex` refers to. Also names the non-fatal reports a process
    /// left unnamed (`ReportNaming.publishLeftovers`).
    func symbolicate(_ report: inout CrashReport, images: [ImageOnDisk]) {
        if symbolicator == nil {
            report.notes.append(
                "llvm-symbolizer not found: frames are named from the images' symbol tables (no file:line, no inlined frames)"
            )
        }
        // One symbolizer run per image, for the frames of every thread. Frame 0 is the interrupted pc
        // itself; the others are return addresses, so look up pc-1 to land inside the call
        // instruction (and the right line/inlining).
        var stacks = report.stacks
        var framesByImage: [Int: [(stack: Int, position: Int)]] = [:]
        for (stack, frames) in stacks.enumerated() {
            for (position, frame) in frames.enumerated() {
                if let image = frame.imageIndex { framesByImage[image, default: []].append((stack, position)) }
            }
        }
        var named = 0
        for (imageIndex, positions) in framesByImage.sorted(by: { $0.key < $1.key })
        where images.indices.contains(imageIndex) {
            let image = images[imageIndex]
            if image.path.hasPrefix("[") { continue }  // [vdso]: nothing on disk
            let onDisk = ELFBuildID.read(path: image.path)
            if let recorded = image.buildID {
                report.images[imageIndex].buildIDMatches = onDisk == recorded
                guard onDisk == recorded else {
                    report.notes.append(
                        "\(image.path): build-id on disk is \(onDisk ?? "unreadable"), the crashed process had \(recorded); its frames are left unsymbolicated"
                    )
                    continue
                }
            }
            let offsets = positions.map { stack, position in
                let frame = stacks[stack][position]
                let address = UInt64(frame.address.dropFirst(2), radix: 16) ?? 0
                return (address &- image.bias) &- frame.lookupAdjustment
            }
            let fromDebugInfo = symbolicator.flatMap { $0.symbolicate(imagePath: image.path, offsets: offsets) }
            if symbolicator != nil && fromDebugInfo == nil {
                report.notes.append(
                    "llvm-symbolizer failed for \(image.path); its frames are named from its symbol table")
            }
            var symbolTable: ELFSymbolTable??
            for (offsetIndex, (stack, position)) in positions.enumerated() {
                if let symbols = fromDebugInfo?[offsetIndex], !symbols.isEmpty {
                    stacks[stack][position].symbols = symbols
                    stacks[stack][position].symbolication =
                        symbols.contains { $0.file != nil } ? .debugInfo : .symbolTable
                } else {
                    if symbolTable == nil { symbolTable = .some(ELFSymbolTable(path: image.path)) }
                    guard let symbol = symbolTable??.symbol(at: offsets[offsetIndex]) else { continue }
                    stacks[stack][position].symbols = [symbol]
                    stacks[stack][position].symbolication = .symbolTable
                }
                named += 1
            }
        }
        for (stack, frames) in stacks.enumerated() { report.setFrames(frames, ofStack: stack) }
        report.symbolicated = named > 0
    }
}
