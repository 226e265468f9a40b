import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 30's attacks on symbolication, against a collector process: one project's debug file stalls
/// its llvm-symbolizer (a wrapper around the real one hangs on that file, as the review's 2 MB file
/// made it take 39 s a lookup) while it sends report after report, and the 548-byte raw report that
/// once killed the collector arrives; meanwhile another project uploads its debug file and a crash,
/// and must get it symbolicated within seconds. The process tree's memory (the symbolizers
/// included) and /health are watched throughout, and SIGTERM must end it all within seconds.
@Suite("Hostile symbolication against a collector process")
struct HostileSymbolicationProcessTests {
    /// Forwards every lookup to the real llvm-symbolizer, except lookups in the file whose blob name
    /// is in `wedge` beside it: those hang for good.
    static let wrapper = """
        #!/bin/bash
        directory=$(dirname "$0")
        coproc REAL { exec "$(cat "$directory/real")" "$@"; }
        while IFS= read -r line; do
            wedge=$(cat "$directory/wedge" 2>/dev/null)
            if [ -n "$wedge" ]; then case "$line" in *"$wedge"*) echo "$line" >> "$directory/wedged"; exec sleep 600 ;; esac; fi
            printf '%s\\n' "$line" >&"${REAL[1]}"
            IFS= read -r answer <&"${REAL[0]}"
            printf '%s\\n' "$answer"
        done
        """

    @Test(
        "a stalled symbolizer holds one project's lane only: another project's crash is symbolicated in seconds; memory and /health stay bounded; SIGTERM ends it at once"
    )
    func stalledSymbolizer() async throws {
        let real = try #require(SymbolizerProcess.locate(), "install Debian's llvm package")
        let fixture = try await SymbolFixture.make()
        defer { fixture.remove() }
        let scratch = TemporaryDirectory(prefix: "collector-hostile-symbols")
        defer { scratch.remove() }
        _ = scratch.write("symbolizer/real", real)
        let wrapperPath = try Tool.installScript(Self.wrapper, at: "\(scratch.path)/symbolizer/llvm-symbolizer")
        let dataDirectory = "\(scratch.path)/data"
        let collector = try await CollectorProcess.start(
            dataDirectory: dataDirectory, environment: ["BLACKBOX_COLLECTOR_SYMBOLIZER": wrapperPath])
        var stopped = false
        defer { if !stopped { collector.kill(SIGKILL) } }

        // The victim: a second project with keys of its own, made in the collector's database.
        let store = try SQLiteStore(path: "\(dataDirectory)/collector.sqlite")
        let victim = try await store.createProject(name: "victim").id
        let victimIngest = "bbx_ingest_victim_\(UUID().uuidString)"
        let victimAdmin = "bbx_admin_victim_\(UUID().uuidString)"
        _ = try await store.createKey(projectID: victim, kind: .ingest, secret: victimIngest)
        _ = try await store.createKey(projectID: victim, kind: .admin, secret: victimAdmin)

        let health = try HealthWatcher(baseURL: collector.baseURL, directory: scratch.path)
        let sampler = Task { () -> Double in
            var peak = 0.0
            while !Task.isCancelled {
                peak = max(peak, collector.treeRSS)
                try? await Task.sleep(for: .milliseconds(100))
            }
            return peak
        }

        // The attacker (the first project): its debug file hangs the symbolizer, and it sends 20 crashes
        // that need it, and the raw report whose numbers once overflowed.
        let original = try Data(contentsOf: URL(fileURLWithPath: fixture.debugFile))
        let hostileFile = original + Data("someone else's bytes".utf8)
        let stored = try await Self.putSymbols(collector.baseURL, fixture.buildID, hostileFile, collector.adminToken)
        #expect(stored.status == 201, "\(stored.text)")
        let hostileBlob = try #require((stored.json["file"] as? [String: Any])?["blob"] as? String)
        _ = scratch.write("symbolizer/wedge", hostileBlob)
        let offset = try await Self.offset(of: "checkout", in: fixture.full)
        let crashes = (0..<20).map { _ in Self.crash(buildID: fixture.buildID, offset: offset) }
        let attack = try await Self.upload(
            collector.baseURL, try BundleArchive.make(app: crashes[0].app, host: "h", reports: crashes),
            key: collector.ingestKey)
        #expect(attack.status == 201, "\(attack.text)")
        let overflow = try RawReportIngestTests.bundle(
            raw: "blackbox-raw-crash 2\napp x\nmessage 9223372036854775807\nxx\nend\n", tail: nil)
        #expect(
            [201, 422].contains(try await Self.upload(collector.baseURL, overflow, key: collector.ingestKey).status))
        // One lane is now stuck on the hostile file.
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: "\(scratch.path)/symbolizer/wedged") {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(FileManager.default.fileExists(atPath: "\(scratch.path)/symbolizer/wedged"), "no lane hung")

        // The victim archives its debug file and crashes: symbolicated from it well within the stuck
        // lane's 30 s deadline.
        #expect(try await Self.putSymbols(collector.baseURL, fixture.buildID, original, victimAdmin).status == 201)
        let crash = Self.crash(buildID: fixture.buildID, offset: offset)
        let started = ContinuousClock.now
        let uploaded = try await Self.upload(
            collector.baseURL, try BundleArchive.make(app: crash.app, host: "h", reports: [crash]), key: victimIngest)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        var state = "no report"
        var waited = Duration.zero
        while !["done", "missing", "failed"].contains(state) && waited < .seconds(40) {
            try await Task.sleep(for: .milliseconds(100))
            waited = ContinuousClock.now - started
            state = try await Self.latestSymbolication(collector.baseURL, victimAdmin)
        }
        #expect(["done", "missing"].contains(state), "the victim's report: \(state)")
        // Alone 0.1 s, in a parallel run 1–4 s, beside a build up to 15 s; waiting for the stalled lane
        // would take its 30 s deadline (three times: attempts), which is what this tells apart.
        #expect(waited < .seconds(25), "the victim's crash waited \(waited) for the attacker's stalled lane")
        let groups = try await HTTP.request(
            "\(collector.baseURL)/api/v1/groups", headers: [("Authorization", "Bearer \(victimAdmin)")])
        let reportID = try #require((groups.json["items"] as? [[String: Any]])?.first?["latestReportID"] as? Int)
        let report = try CrashReport.decode(
            try await HTTP.request(
                "\(collector.baseURL)/api/v1/reports/\(reportID)", headers: [("Authorization", "Bearer \(victimAdmin)")]
            ).body)
        #expect(report.frames[1].symbolication == .debugInfo, "\(report.frames[1])")
        #expect(report.frames[1].symbols.contains { $0.function == "checkout" && $0.file?.hasSuffix("app.c") == true })

        sampler.cancel()
        let peakTree = await sampler.value
        let watched = health.stop()
        print(
            "hostile symbolication: victim symbolicated after \(waited); process tree peak \(Int(peakTree)) MiB; \(watched)"
        )
        #expect(peakTree < 512, "process tree peak \(peakTree) MiB")
        #expect(watched.requests > 0 && watched.failures == 0, "\(watched)")
        // As in the hostile-upload suite: the 99th percentile, and the slowest within 5 s.
        #expect(watched.p99 < .seconds(1), "\(watched)")
        #expect(watched.worst < .seconds(5), "\(watched)")

        // Shutdown does not wait for the hung lookup.
        let terminating = ContinuousClock.now
        collector.kill(SIGTERM)
        stopped = true
        #expect(ContinuousClock.now - terminating < .seconds(10), "SIGTERM took \(ContinuousClock.now - terminating)")
    }

    /// The state of the victim's only report.
    static func latestSymbolication(_ base: String, _ token: String) async throws -> String {
        let groups = try await HTTP.request("\(base)/api/v1/groups", headers: [("Authorization", "Bearer \(token)")])
        let items = groups.json["items"] as? [[String: Any]] ?? []
        guard let id = items.compactMap({ $0["latestReportID"] as? Int }).first else { return "no report" }
        let state = try await HTTP.request(
            "\(base)/api/v1/reports/\(id)/symbolication", headers: [("Authorization", "Bearer \(token)")])
        return state.json["state"] as? String ?? state.text
    }

    /// A crash in `checkout` of the fixture's binary, named from the symbol table only (as a stripped
    /// binary names itself), so that the collector looks it up in the debug file.
    static func crash(buildID: String, offset: UInt64) -> CrashReport {
        var report = Reports.crash(functions: ["checkout"])
        report.images[0].buildID = buildID
        let base: UInt64 = 0x5555_0000_0000
        // A return address just past the call: looked up at pc - 1.
        report.frames[1].address = Reports.hex(base + offset + 1)
        report.frames[1].imageOffset = Reports.hex(offset + 1)
        report.frames[1].symbols = [.init(function: "checkout")]
        report.frames[1].symbolication = .symbolTable
        report.frames[0].symbolication = .symbolTable
        return report
    }

    static func offset(of function: String, in binary: String) async throws -> UInt64 {
        let listed = try await Tool.Running("/usr/bin/nm", [binary], environment: [:]).wait()
        let line = try #require(listed.stdout.split(separator: "\n").first { $0.hasSuffix(" T \(function)") })
        return try #require(UInt64(line.split(separator: " ")[0], radix: 16))
    }

    static func putSymbols(_ base: String, _ buildID: String, _ body: Data, _ token: String) async throws
        -> HTTPResult
    {
        try await HTTP.request(
            "\(base)/api/v1/symbols/\(buildID)?name=app.debug", method: .PUT,
            headers: [("Authorization", "Bearer \(token)")], body: body)
    }

    static func upload(_ base: String, _ body: Data, key: String) async throws -> HTTPResult {
        try await HTTP.request(
            "\(base)/api/v1/bundles", method: .POST,
            headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/zip"),
                ("Upload-Id", UUID().uuidString),
            ], body: body)
    }
}
