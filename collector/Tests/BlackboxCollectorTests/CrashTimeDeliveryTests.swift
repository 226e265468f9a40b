import BlackboxFormat
import BlackboxSymbols
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 19's crash-time delivery, with real parts: a stripped release app crashes in a mount
/// namespace whose diagnostics directory is a tmpfs (it vanishes with the process, as an ephemeral
/// container's does); the handler starts the real `blackbox deliver-crash`, which sends the raw
/// report to a real collector on loopback, which builds the report and names it from its symbol store.
@Suite("Crash-time delivery: the report reaches the collector before the container's files vanish")
struct CrashTimeDeliveryTests {
    static var releaseApp: String { "\(ProductionSymbolicationTests.releaseBinDirectory)/blackbox-crash-child" }

    /// The production recipe (no toolchain, no LLVM), with the diagnostics directory on a tmpfs of
    /// the namespace: nothing the app writes there is left once it ends.
    static func inVanishingContainer(
        diagnostics: String, _ program: String, _ arguments: [String], environment: [String: String]
    ) async throws -> Tool.Result {
        let script =
            "set -e\nmount --make-rprivate /\nmount -t tmpfs -o size=64m tmpfs \"$BLACKBOX_TEST_TMPFS\"\n"
            + ProductionSymbolicationTests.hideToolchain
        var environment = environment
        environment["BLACKBOX_TEST_TMPFS"] = diagnostics
        return try await Tool.Running(
            "/usr/bin/unshare", ["-m", "/bin/bash", "-c", script, "container", program] + arguments,
            environment: environment
        ).wait()
    }

    /// The default deadline is generous: alone, a delivery takes under a second, but this collector
    /// runs in the test process, whose handlers wait on the test pool that a loaded parallel run keeps
    /// busy (the DSN delivery test missed a 20 s deadline so before its collector got a process of its
    /// own). Success ends the helper at once; only a failing delivery waits the deadline out.
    static func delivery(to collector: TestCollector, deadlineMilliseconds: Int = 60_000) -> [String: String] {
        [
            "CRASH_CHILD_DELIVERY_HELPER": "\(Tool.binDirectory)/blackbox",
            "CRASH_CHILD_DELIVERY_SERVER": collector.baseURL,
            "CRASH_CHILD_DELIVERY_KEY": collector.ingestKey,
            "CRASH_CHILD_DELIVERY_DEADLINE_MS": String(deadlineMilliseconds),
        ]
    }

    @Test(
        "a stripped app crashes in a namespace on a vanishing tmpfs: the collector has the report, named (blobs in a directory or in a bucket)",
        arguments: [false, true])
    func reportSurvivesTheContainer(inBucket: Bool) async throws {
        try #require(getuid() == 0, "the namespace needs root (unshare -m); CI runs as root")
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let debianSymbolizer = "/usr/bin/llvm-symbolizer"
        try #require(FileManager.default.fileExists(atPath: debianSymbolizer), "install Debian's llvm package")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        let app = "\(scratch.path)/app"
        let debugFile = "\(scratch.path)/app.debug"
        try FileManager.default.copyItem(atPath: Self.releaseApp, toPath: app)
        for arguments in [["--only-keep-debug", app, debugFile], ["--strip-debug", app]] {
            #expect(try run("/usr/bin/objcopy", arguments, in: scratch.path) == 0, "objcopy \(arguments)")
        }
        let buildID = try #require(ELFBuildID.read(path: app))
        // Issue 51: with the blobs in a bucket (a real SeaweedFS), the debug file is an object there
        // and the symbolizer reads it through the collector's local cache.
        let bucket = inBucket ? try await S3ClientTests.client(prefix: "prod") : nil
        let seaweed = inBucket ? try await SeaweedServer.running() : nil
        let collector = try await TestCollector.start { configuration in
            configuration.symbolizerPath = debianSymbolizer
            if let bucket, let seaweed {
                configuration.blobURL = "s3://\(bucket.configuration.bucket)/prod"
                configuration.awsEnvironment = seaweed.environment
            }
        }
        let archived = try await Tool.run(
            "blackbox",
            ["symbols", "upload", "--server", collector.baseURL, "--token", collector.adminToken, debugFile])
        #expect(archived.status == 0, "\(archived.stdout)\(archived.stderr)")
        if let bucket {
            let symbols = try await bucket.list(prefix: "symbols/").objects.map(\.key)
            #expect(symbols.count == 1, "the debug file is in the bucket: \(symbols)")
        }

        let diagnostics = "\(scratch.path)/diagnostics"
        try FileManager.default.createDirectory(atPath: diagnostics, withIntermediateDirectories: true)
        let started = ContinuousClock.now
        let crashed = try await Self.inVanishingContainer(
            diagnostics: diagnostics, app, [diagnostics, "index", "main"], environment: Self.delivery(to: collector))
        let elapsed = ContinuousClock.now - started
        #expect(crashed.signal == SIGTRAP || crashed.signal == SIGILL, "\(crashed.status) \(crashed.stderr)")
        #expect(crashed.stderr.contains("deliver") == false, "the helper complained: \(crashed.stderr)")
        // The container's files are gone: only the collector has the crash.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: diagnostics)) ?? []).isEmpty)
        print("crash with delivery to exit: \(elapsed)")

        var group: [String: Any] = [:]
        let named = try await ProductionSymbolicationTests.eventually {
            await collector.server.symbolicatePending()
            let items = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
            guard let first = items.first(where: { ($0["count"] as? Int ?? 0) > 0 }) else { return false }
            group = first
            return (first["title"] as? String)?.contains("triggerIndexOutOfRange") == true
        }
        #expect(named, "no named group: \(group)")
        let reportID = try #require(group["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(report.app.name == "crash-child" && report.app.version == "1.0")
        #expect(report.notes.contains { $0.contains("built by the collector") }, "\(report.notes)")
        #expect(
            report.notes.contains { $0.contains("symbolicated by the collector from app.debug") }, "\(report.notes)")
        #expect(report.reason == "Swift runtime failure: Index out of range", "\(report.reason ?? "none")")
        let diagnosis = try await HTTP.get(collector, "/api/v1/reports/\(reportID)/diagnosis").json
        #expect(diagnosis["kind"] as? String == "index-out-of-range", "\(diagnosis)")
        #expect(diagnosis["summary"] as? String == "Index out of range", "\(diagnosis)")
        #expect(report.logTail.contains { $0.contains("about to crash: index on main") }, "\(report.logTail)")
        #expect(report.metadata["test"] == "crash-matrix")
        let appImage = try #require(report.images.firstIndex { $0.buildID == buildID })
        let function = report.frames.filter { $0.imageIndex == appImage }.flatMap(\.symbols)
            .first { $0.function.contains("triggerIndexOutOfRange") }
        #expect(function?.file?.hasSuffix("Triggers.swift") == true, "\(report.frames)")
        let threads = try #require(report.threads)
        #expect(threads.count >= 3 && threads.first?.crashed == true, "\(threads.map(\.name))")
        #expect(threads.contains { $0.name == "blackbox-writer" }, "\(threads.map(\.name))")
        if let bucket {
            let blobs = try await bucket.list(prefix: "blobs/").objects.map(\.key)
            #expect(blobs.count == 1, "the crash's bundle is in the bucket: \(blobs)")
        }
        await collector.stop()
    }

    @Test(
        "the collector unreachable: the helper gives up in time, the app dies by its signal, the next launch sends it")
    func unreachableCollectorLeavesTheReport() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let diagnostics = "\(scratch.path)/diagnostics"
        let collector = try await TestCollector.start()
        // A port nobody listens on: every attempt is refused.
        var environment = Self.delivery(to: collector, deadlineMilliseconds: 3_000)
        environment["CRASH_CHILD_DELIVERY_SERVER"] = "http://127.0.0.1:\(try closedPort())"
        let running = try Tool.Running(Self.releaseApp, [diagnostics, "null-write", "main"], environment: environment)
        // The exit's time as a thread of its own sees it: the test pool, busy in a parallel run, may
        // notice it seconds late. (`ChildExit.of` does not reap: `wait()` still gets the outcome.)
        let pid = running.process.processIdentifier
        async let exitSeen = offThePool {
            while ChildExit.of(pid) == .running { usleep(2_000) }
            return Date()
        }
        let crashed = try await running.wait()
        let exited = try await exitSeen
        #expect(crashed.signal == SIGSEGV, "\(crashed.status) \(crashed.stderr)")
        let pending = DiagnosticsDirectory(diagnostics).pendingCrashes
        let raws = try FileManager.default.contentsOfDirectory(atPath: pending).filter { $0.hasSuffix(".raw") }
        #expect(raws.count == 1)
        // Timed from the crash (the report's name holds its second), not from the launch: a loaded
        // machine's slow start-up is not the helper's wait. 3 s deadline, + up to 1 s of the name's
        // rounding, + walking the threads, writing the report and the exit, which took up to 6.4 s
        // together in a parallel run on 2 busy CPUs (0.9 s alone). Before the deadline, a crashed
        // process lived 12-20 s.
        let crashSecond = try #require(
            raws.first.flatMap { $0.split(separator: "-").dropFirst().first }.flatMap { Int($0) })
        let crashToExit = exited.timeIntervalSince1970 - Double(crashSecond)
        #expect(crashToExit < 10, "the crashed process lived \(crashToExit) s after its crash for a 3 s deadline")
        // Decoded leniently: the journal's bytes in it are binary.
        let raw = String(
            decoding: try Data(contentsOf: URL(fileURLWithPath: "\(pending)/\(raws.first ?? "")")), as: UTF8.self)
        #expect(raw.contains("\ndelivery exit-status 3\n"), "\(raw.suffix(200))")

        let next = try await Tool.Running(Self.releaseApp, [diagnostics, "process-pending", "next"], environment: [:])
            .wait()
        #expect(next.status == 0, "\(next.stderr)")
        let uploaded = try await Tool.run(
            "blackbox", ["upload", diagnostics, "--server", collector.baseURL, "--key", collector.ingestKey])
        #expect(uploaded.status == 0, "\(uploaded.stderr)")
        let items = try await HTTP.get(collector, "/api/v1/groups").json["items"] as? [[String: Any]] ?? []
        #expect(items.count == 1)
        let reportID = try #require(items.first?["latestReportID"] as? Int)
        let report = try CrashReport.decode(try await HTTP.get(collector, "/api/v1/reports/\(reportID)").body)
        #expect(report.notes.contains { $0.contains("crash-time delivery did not complete (exit-status 3)") })
        await collector.stop()
    }

    @Test("a crash delivered at crash time counts its session at once, and the next launch takes it for no kill")
    func deliveredCrashIsNoUnseenDeath() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.releaseApp), "no release crash child")
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let diagnostics = "\(scratch.path)/diagnostics"
        let layout = DiagnosticsDirectory(diagnostics)
        let collector = try await TestCollector.start()
        // A run that ended cleanly before: its session goes out with the crash.
        #expect(
            try await Tool.Running(Self.releaseApp, [diagnostics, "clean-exit", "main"], environment: [:]).wait().status
                == 0)
        let crashed = try await Tool.Running(
            Self.releaseApp, [diagnostics, "null-write", "main"], environment: Self.delivery(to: collector)
        ).wait()
        #expect(crashed.signal == SIGSEGV, "\(crashed.stderr)")
        let pending = (try? FileManager.default.contentsOfDirectory(atPath: layout.pendingCrashes)) ?? []
        #expect(pending.filter { $0.hasSuffix(".raw") }.isEmpty, "delivered: the raw report is gone")
        #expect(layout.endedSessionFiles().isEmpty, "the earlier run's count went with the crash")
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: layout.runs)) ?? []).filter {
            $0.hasSuffix(".json")
        }
        #expect(records.isEmpty, "the crashed run is accounted for: \(records)")
        let releases = try await HTTP.get(collector, "/api/v1/releases").json["items"] as? [[String: Any]] ?? []
        #expect(releases.first?["sessions"] as? Int == 2 && releases.first?["crashed"] as? Int == 1, "\(releases)")

        let next = try await Tool.Running(Self.releaseApp, [diagnostics, "clean-exit", "main"], environment: [:]).wait()
        #expect(next.status == 0, "\(next.stderr)")
        let outbox = (try? FileManager.default.contentsOfDirectory(atPath: layout.outbox)) ?? []
        #expect(!outbox.contains { $0.hasPrefix("termination-") }, "not mistaken for a kill: \(outbox)")
        #expect(EndedSession.pending(in: layout).sessions.map(\.outcome) == [.clean], "only the new run waits")
        await collector.stop()
    }

    /// A loopback port that was free a moment ago and has nobody listening.
    private func closedPort() throws -> Int {
        let socket = try LoopbackSocket(listening: false)
        defer { close(socket.descriptor) }
        return socket.port
    }
}
