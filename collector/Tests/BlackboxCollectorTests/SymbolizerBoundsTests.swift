import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// The symbolizer is a shared resource: its memory is bounded, a wedged one ends at shutdown at once,
/// and one that fails is a failed lookup, never a stall.
@Suite("Symbolizer bounds")
struct SymbolizerBoundsTests {
    static var symbolizer: String? { SymbolizerProcess.locate() }

    /// A file to look addresses up in: a small one (this test bundle, 165 MB of debug info, made the
    /// symbolizer a heavy neighbour of every test running in parallel).
    static var bundle: String { "/usr/bin/true" }

    @Test("the child runs under its address-space limit: a generous one works, a tiny one fails the lookup")
    func addressSpaceLimit() async throws {
        let executable = try #require(Self.symbolizer, "install Debian's llvm package")
        let generous = SymbolizerProcess(executable: executable, addressSpaceLimit: 2 << 30)
        #expect(await generous.symbolicate(file: Self.bundle, addresses: [0x1000]) != nil)
        let pid = try #require(generous.childPID)
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max address space") })
        #expect(line.contains("\(2 << 30)"), "\(line)")
        generous.stop()

        // Under 16 MiB it cannot load the file (or start at all): no name comes back, and the limit is
        // the one set.
        let tiny = SymbolizerProcess(executable: executable, addressSpaceLimit: 16 << 20)
        let answer = await tiny.symbolicate(file: Self.bundle, addresses: [0x1000])
        #expect(answer == nil || answer?.allSatisfy(\.isEmpty) == true, "\(String(describing: answer))")
        if let tinyPID = tiny.childPID,
            let tinyLimits = try? String(contentsOfFile: "/proc/\(tinyPID)/limits", encoding: .utf8)
        {
            #expect(tinyLimits.contains("\(16 << 20)"))
        }
        tiny.stop()
    }

    @Test("a symbolizer that never answers is ended by stop() at once, not after its 30 s deadline")
    func stopEndsAWedgedChild() async throws {
        let directory = TemporaryDirectory()
        let wedged = "\(directory.path)/wedged-symbolizer"
        try Tool.installScript("#!/bin/sh\nexec sleep 600\n", at: wedged)
        let symbolizer = SymbolizerProcess(executable: wedged, timeout: .seconds(30))
        async let answer = symbolizer.symbolicate(file: Self.bundle, addresses: [0x1000])
        // Stopped once the child runs (on a loaded machine its start may take a while).
        for _ in 0..<200 where symbolizer.childPID == nil { try await Task.sleep(for: .milliseconds(50)) }
        #expect(symbolizer.childPID != nil)
        let stopped = ContinuousClock.now
        symbolizer.stop()
        #expect(await answer == nil)
        #expect(ContinuousClock.now - stopped < .seconds(15), "stop() must not wait for the 30 s deadline")
    }

    @Test("a symbolizer that dies is a failed lookup, at once")
    func deadChild() async {
        let symbolizer = SymbolizerProcess(executable: "/bin/false")
        #expect(await symbolizer.symbolicate(file: Self.bundle, addresses: [0x1000]) == nil)
    }
}
