import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Whether a file's writer still runs, told by a lock the kernel drops when it ends, not by its pid:
/// a dead app's unnamed report under a pid that came back was left unpublished (seen in CI, where a
/// loaded machine wrapped `pid_max` 32768; a container's app is pid 1 at every start).
@Suite struct LiveProcessMarkTests {
    /// A mark as another process holds it: made, locked through a descriptor of its own (a lock is
    /// per open file, so this process's look through a new descriptor finds it taken).
    private func heldMark(_ token: String, in directory: String) -> Int32 {
        let fd = open("\(directory)/\(LiveProcessMark.prefix)\(token)", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd
    }

    @Test("a process's own mark, a living one's, an ended one's, and none")
    func owners() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let mine = try #require(LiveProcessMark.mine(in: directory.path))
        #expect(LiveProcessMark.mine(in: directory.path)?.token == mine.token, "taken once per directory")
        #expect(mine.token.hasPrefix("\(getpid())-"))
        #expect(LiveProcessMark.owner(of: mine.token, in: directory.path) == .thisProcess)

        let living = heldMark("1-living", in: directory.path)
        #expect(LiveProcessMark.owner(of: "1-living", in: directory.path) == .living)
        close(living)
        #expect(LiveProcessMark.owner(of: "1-living", in: directory.path) == .ended, "its lock went with it")
        #expect(LiveProcessMark.owner(of: "1-never", in: directory.path) == .ended, "no mark: nobody")

        let held = heldMark("2-held", in: directory.path)
        defer { close(held) }
        LiveProcessMark.removeEnded(in: directory.path)
        let left = Set(directoryEntries(directory.path))
        #expect(left == ["\(LiveProcessMark.prefix)\(mine.token)", "\(LiveProcessMark.prefix)2-held"], "\(left)")
    }

    @Test("a dead process's unnamed report is published even when its pid runs again; a living one's stays")
    func leftoversByMark() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let outbox = DiagnosticsDirectory(directory.path).outbox
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        var report = CrashReport(
            kind: .error, app: .init(name: "child"),
            host: .init(name: "h", os: "linux", kernel: "6", architecture: "x86_64"),
            process: .init(pid: 1, path: "/app", startTime: nil, crashTime: Date()), thread: .init(id: 1, name: nil))
        report.frames = [CrashReport.Frame(index: 0, address: "0x1000")]
        func leave(_ report: CrashReport, owner: String) throws -> String {
            let path = "\(outbox)/error-\(report.id.uuidString.lowercased()).json\(ReportNaming.unnamedSuffix)\(owner)"
            try CrashReport.makeEncoder().encode(report).write(to: URL(fileURLWithPath: path))
            return path
        }
        // The pid in the token is this test runner's parent: alive, as a reused pid would be.
        let ended = "\(getppid())-ended"
        close(heldMark(ended, in: outbox))
        let endedPath = try leave(report, owner: ended)
        var other = report
        other.id = UUID()
        let living = "\(getppid())-living"
        let held = heldMark(living, in: outbox)
        defer { close(held) }
        let livingPath = try leave(other, owner: living)

        ReportNaming.publishLeftovers(
            in: DiagnosticsDirectory(directory.path), builder: CrashReportBuilder(symbolicator: nil))

        #expect(!FileManager.default.fileExists(atPath: endedPath))
        #expect(FileManager.default.fileExists(atPath: "\(outbox)/error-\(report.id.uuidString.lowercased()).json"))
        #expect(FileManager.default.fileExists(atPath: livingPath), "a living process's report is its own")
        let marks = directoryEntries(outbox).filter { $0.hasPrefix(LiveProcessMark.prefix) }
        #expect(marks == ["\(LiveProcessMark.prefix)\(living)"], "the ended mark is removed: \(marks)")
    }

    @Test("a forked child does not keep its parent's mark: once the parent ends, its files are published")
    func forkedChildLetsGo() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let mark = try #require(LiveProcessMark.mine(in: directory.path))
        var ready: [Int32] = [-1, -1]
        #expect(pipe(&ready) == 0)
        let child = fork()
        if child == 0 {
            // The child handlers have run; from here on only what a forked child may call.
            var byte: UInt8 = 1
            _ = write(ready[1], &byte, 1)
            usleep(10_000_000)
            _exit(0)
        }
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        close(ready[1])
        var byte: UInt8 = 0
        #expect(read(ready[0], &byte, 1) == 1, "the child started")
        close(ready[0])
        #expect(LiveProcessMark.owner(of: mark.token, in: directory.path) == .thisProcess)
        LiveProcessMark.release(in: directory.path)  // this process's end, as far as the mark goes
        #expect(
            LiveProcessMark.owner(of: mark.token, in: directory.path) == .ended,
            "the child closed its copy of the descriptor at fork")
        #expect(LiveProcessMark.mine(in: directory.path)?.token != mark.token, "a new mark after a release")
    }
}
