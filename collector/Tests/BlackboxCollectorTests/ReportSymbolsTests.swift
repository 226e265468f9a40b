import BlackboxFormat
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Symbolicating every thread of a stored report")
struct ReportSymbolsTests {
    /// A crash whose crashed thread is named from debug info, with a second thread whose frame in the
    /// app (build-id `ab`) has only its symbol-table name.
    func report() -> CrashReport {
        var report = Reports.crash(functions: ["shop.checkout() -> ()"])
        let waiting = CrashReport.Frame(
            index: 1, address: "0x555500003010", imageIndex: 0, imageOffset: "0x3010",
            symbols: [.init(function: "shop.Worker.wait() -> ()")], symbolication: .symbolTable)
        report.threads = [
            .init(id: 100, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames),
            .init(
                id: 101, name: "worker", crashed: false, frameSource: "libunwind",
                frames: [report.frames[0], waiting]),
        ]
        return report
    }

    @Test("a frame lacking debug info in another thread keeps its image unresolved and is looked up")
    func otherThreadsCount() throws {
        let report = report()
        #expect(ReportSymbols.imageUses(report).first { $0.buildID == "ab" }?.resolved == false)
        let lookups = ReportSymbols.lookups(in: report, buildID: "ab")
        #expect(lookups.map(\.frame) == [.init(stack: 1, frame: 1)])
        // A return address: looked up at pc - 1, relative to the image's bias.
        #expect(lookups.first?.address == 0x300f)
    }

    @Test("an image with some frames named from debug info is not missing debug info (its _start has none)")
    func partlyNamedImage() throws {
        let report = report()
        #expect(ReportSymbols.imagesLackingDebugInfo(report).contains("ab") == false, "\(report.frames)")
        var unnamed = report
        unnamed.frames = unnamed.frames.map { frame in
            var frame = frame
            frame.symbolication = .symbolTable
            return frame
        }
        unnamed.threads = nil
        #expect(ReportSymbols.imagesLackingDebugInfo(unnamed).contains("ab"))
    }

    @Test("the C runtime's start-file code (_start) neither keeps an image waiting nor makes it missing")
    func startFileCode() throws {
        var report = report()
        report.threads = nil
        let start = CrashReport.Frame(
            index: 9, address: "0x5555ffff0100", imageIndex: report.frames[1].imageIndex, imageOffset: "0x100",
            symbols: [.init(function: "_start")], symbolication: .symbolTable)
        #expect(ReportSymbols.imageUses(report).first { $0.buildID == "ab" }?.resolved == true)
        report.frames.append(start)
        #expect(ReportSymbols.imageUses(report).first { $0.buildID == "ab" }?.resolved == true, "\(report.frames)")
        report.frames[report.frames.count - 1].symbols = [.init(function: "shop.main() -> ()")]
        #expect(
            ReportSymbols.imageUses(report).first { $0.buildID == "ab" }?.resolved == false, "any other name counts")
    }

    @Test("applying names the other thread's frame and keeps the crashed thread's frames in both places")
    func applying() throws {
        let report = report()
        let named = ReportSymbols.applying(
            [.init(stack: 1, frame: 1): [.init(function: "shop.Worker.wait() -> ()", file: "Worker.swift", line: 3)]],
            from: "shop.debug", buildID: "ab", to: report)
        let worker = try #require(named.threads?[1].frames[1])
        #expect(worker.symbolication == .debugInfo && worker.symbols.first?.file == "Worker.swift")
        #expect(named.threads?[0].frames == named.frames && named.frames == report.frames)
        #expect(ReportSymbols.imageUses(named).first { $0.buildID == "ab" }?.resolved == true)
        #expect(named.notes.last?.contains("1 frame symbolicated by the collector from shop.debug") == true)
    }

    @Test("names from a hostile debug file are cut to the field limit, and inlined frames to their limit")
    func boundedNames() throws {
        let huge = String(repeating: "f", count: 1 << 20)
        let symbols = (0..<200).map { CrashReport.Symbol(function: huge, file: huge, line: $0) }
        let named = ReportSymbols.applying(
            [.init(stack: 1, frame: 1): symbols], from: "evil.debug", buildID: "ab", to: report())
        let frame = try #require(named.threads?[1].frames[1])
        #expect(frame.symbols.count == ReportSymbols.maxInlinedSymbols)
        #expect(frame.symbols.allSatisfy { $0.function.utf8.count <= ReportSymbols.maxSymbolBytes })
        #expect(frame.symbols.allSatisfy { ($0.file?.utf8.count ?? 0) <= ReportSymbols.maxSymbolBytes })
    }
}
