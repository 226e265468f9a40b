import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Every thread of the crashing process in its report (issue 19, item 1). The crash child's thread
/// scenes are in Sources/blackbox-crash-child/ThreadScenes.swift.
@Suite("Every thread in the crash report", .serialized)
struct AllThreadsTests {
    /// The eight named threads and the function each is stopped in.
    static let scene: [(thread: String, function: String)] = [
        ("bbx-holder", "holdTheMutex"), ("bbx-mutex-1", "waitForTheMutex"), ("bbx-mutex-2", "waitForTheMutex"),
        ("bbx-mutex-3", "waitForTheMutex"), ("bbx-read", "waitInRead"), ("bbx-spin", "spinForever"),
        ("bbx-cond", "waitOnCondition"), ("bbx-sleep", "sleepForever"),
    ]

    /// Checks the crashed thread comes first and is the report's own, and that each scene thread is
    /// there with its name and the function it waits in.
    func checkScene(_ report: CrashReport, place: String, build: Build) throws {
        let threads = try #require(report.threads, "\(place) (\(build)): no threads; notes: \(report.notes)")
        #expect(threads.first?.crashed == true && threads.filter(\.crashed).count == 1)
        #expect(threads.first?.id == report.thread.id && threads.first?.frames == report.frames)
        #expect(Set(threads.map(\.id)).count == threads.count, "each thread once")
        #expect(
            !threads.contains { $0.name == "bbx-crash-watch" || $0.name == "bbx-altstacks" },
            "the handler's own threads are left out")
        for (name, function) in Self.scene {
            let thread = try #require(threads.first { $0.name == name }, "\(place) (\(build)): \(name) missing")
            #expect(thread.problem == nil, "\(name): \(thread.problem ?? "")")
            #expect(!thread.crashed)
            let names = thread.frames.flatMap { $0.symbols.map(\.function) }
            #expect(
                names.contains { $0.contains(function) },
                "\(place) (\(build)): \(name) should be in \(function): \(names.prefix(6))")
        }
        let text = report.textRendering
        for (name, _) in Self.scene { #expect(text.contains("\"\(name)\" (")) }
    }

    @Test(
        "a crash with eight named threads reports each with its frames, the crashed one first",
        arguments: Build.allCases.filter { $0.binDirectory != nil })
    func eightNamedThreads(build: Build) throws {
        for place in ["main", "dispatch"] {
            let directory = TemporaryDirectory()
            let (result, report, outcome) = try crashAndProcess(
                "eight-threads", on: place, build: build, directory: directory)
            #expect(result.signaled && result.status == SIGSEGV)
            #expect(outcome.processed.count == 1)
            let processed = try #require(report)
            try checkScene(processed, place: place, build: build)
            // The frames of the other threads are symbolicated like the crashed one's.
            let crashed = try #require(processed.threads?.first)
            #expect(crashed.frames.first?.symbols.first?.function.contains("bbx_test_null_write") == true)
            if place == "dispatch" {
                // libdispatch's workers block every asynchronous signal but SIGPROF: the crashed
                // one is a worker, and the others answered on the fallback signal.
                #expect(processed.thread.id != processed.process.pid)
                #expect(processed.threads?.contains { $0.id == processed.process.pid && $0.problem == nil } == true)
            }
        }
    }

    @Test("a crash while another thread holds the loader lock: one report, the process dies, no hang")
    func loaderLockHeld() throws {
        let directory = TemporaryDirectory()
        let started = ContinuousClock.now
        let (result, report, outcome) = try crashAndProcess(
            "loader-lock", on: "main", build: .debug, directory: directory)
        let elapsed = ContinuousClock.now - started
        #expect(result.signaled && result.status == SIGSEGV)
        // The handler's watchdog (10 s) ends it; well under the 30 s a hang would be cut at.
        #expect(elapsed < .seconds(30), "\(elapsed)")
        #expect(outcome.processed.count == 1)
        let processed = try #require(report)
        #expect(processed.notes.contains { $0.contains("watchdog fired") }, "\(processed.notes)")
        let threads = try #require(processed.threads)
        // libunwind blocks on the lock everywhere but on the thread holding it: the others still have
        // their frame-pointer walk.
        for (name, _) in Self.scene {
            let thread = try #require(threads.first { $0.name == name })
            #expect(!thread.frames.isEmpty && thread.problem == nil, "\(name)")
        }
        let loader = try #require(threads.first { $0.name == "bbx-loader" })
        #expect(loader.frames.contains { $0.symbols.contains { $0.function.contains("bbx_test_hold_loader_lock") } })
    }

    @Test("the capture scales: 256 idle threads are all in the report")
    func manyThreads() throws {
        let directory = TemporaryDirectory()
        let (result, report, _) = try crashAndProcess("threads-256", on: "main", build: .debug, directory: directory)
        #expect(result.signaled && result.status == SIGSEGV)
        let threads = try #require(report?.threads)
        let idle = threads.filter { $0.name?.hasPrefix("bbx-idle-") == true }
        #expect(idle.count == 256)
        #expect(
            idle.allSatisfy { thread in
                thread.frames.contains { $0.symbols.contains { $0.function.contains("sleepForever") } }
            })
    }
}

@Suite("Thread stacks in the report format")
struct ThreadStackFormatTests {
    func report() -> CrashReport {
        var report = CrashReport(
            kind: .crash, app: .init(name: "app"),
            host: .init(name: "h", os: "Linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 7, crashTime: Date(timeIntervalSince1970: 1_700_000_000)),
            thread: .init(id: 7, name: "main"))
        report.frames = [.init(index: 0, address: "0x10")]
        report.threads = [
            .init(id: 7, name: "main", crashed: true, frameSource: "libunwind", frames: report.frames),
            .init(
                id: 8, name: "worker", crashed: false, frameSource: "frame-pointers",
                frames: [.init(index: 0, address: "0x20")]),
            .init(id: 9, name: nil, crashed: false, frameSource: "none", problem: "no-answer", frames: []),
        ]
        return report
    }

    @Test("stacks and setFrames keep the crashed thread's frames in both places")
    func stacks() {
        var report = report()
        #expect(report.stacks.map { $0.map(\.address) } == [["0x10"], ["0x20"], []])
        let named = [CrashReport.Frame(index: 0, address: "0x10", symbols: [.init(function: "f")])]
        report.setFrames(named, ofStack: 0)
        #expect(report.frames == named && report.threads?[0].frames == named)
        report.setFrames([.init(index: 0, address: "0x21")], ofStack: 1)
        #expect(report.threads?[1].frames.first?.address == "0x21" && report.frames == named)
    }

    @Test("the other threads' frames are bounded in all: each keeps its innermost share, marked truncated")
    func frameBudget() throws {
        var raw = "blackbox-raw-crash 2\npid 1\ntid 1\nthread main\nfp 0x10\nfp-end 1\n"
        for thread in 2...5 {
            raw += "thread-begin \(thread) ok frame-pointers\nthread-name t\(thread)\n"
            raw += (0..<40).map { "thread-frame 0x\(String(0x1000 + $0, radix: 16))\n" }.joined()
            raw += "thread-end 40 complete\n"
        }
        raw += "thread-begin 6 no-answer none\nthread-end 0 complete\nthreads-end 5000\nend\n"
        let parsed = try RawCrashReport(bytes: Array(raw.utf8))
        // 100 frames for five other threads: 20 each.
        var builder = CrashReportBuilder(symbolicator: nil)
        builder.assembler.otherThreadFrameBudget = 100
        let report = builder.build(from: parsed)
        let threads = try #require(report.threads)
        #expect(threads.map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(threads[1...4].allSatisfy { $0.frames.count == 20 && $0.problem == "truncated" })
        #expect(threads[1].frames.first?.address == "0x1000", "the innermost frames are kept")
        #expect(threads[5].problem == "no-answer" && threads[5].frames.isEmpty)
        #expect(report.notes.contains { $0.contains("threads without a stack: 6 (no-answer)") }, "\(report.notes)")
        // Generous enough, nothing is cut.
        let whole = CrashReportBuilder(symbolicator: nil).build(from: parsed)
        #expect(whole.threads?[1].frames.count == 40 && whole.threads?[1].problem == nil)
    }

    @Test("version 2 round-trips; a version 1 report (no threads) still decodes")
    func versions() throws {
        let report = report()
        let data = try CrashReport.makeEncoder().encode(report)
        #expect(try CrashReport.decode(data) == report)
        var old = report
        old.threads = nil
        let version1 = String(decoding: try CrashReport.makeEncoder().encode(old), as: UTF8.self)
            .replacingOccurrences(of: "\"formatVersion\" : 2", with: "\"formatVersion\" : 1")
        #expect(version1.contains("\"formatVersion\" : 1") && !version1.contains("threads"))
        let decoded = try CrashReport.decode(Data(version1.utf8))
        #expect(decoded.threads == nil && decoded.frames == report.frames)
        let text = report.textRendering
        #expect(text.contains("Thread 8 \"worker\" (frame-pointers):") && text.contains("Thread 9 (none, no-answer):"))
    }
}
