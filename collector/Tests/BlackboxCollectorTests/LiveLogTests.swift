import BlackboxCompression
import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import BlackboxCollector

/// Issue 33, item 4: a running app's log lines reach the collector's search within a minute, and a
/// `kill -9` while it ships them loses none and duplicates none.
@Suite("Logs within a minute")
struct LiveLogTests {
    /// Every `tick n=<N> pid=<P>` in the app's log files (active file and archives, compressed or not).
    static func ticks(inLogs logs: String) throws -> [String] {
        var ticks: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: logs) {
            let path = "\(logs)/\(name)"
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            if name.hasSuffix(".gz") { bytes = try GzipData.decompress(bytes, limit: 64 << 20) }
            ticks += String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap(Self.tick)
        }
        return ticks
    }

    /// Where lines that are not searchable went, for the failure message: which of them the collector
    /// stored (in which bundle's file: then indexing lost them) and which it never received (then
    /// shipping did), as runs of tick numbers per process.
    static func locate(_ missing: [String], at collector: TestCollector) async throws -> String {
        var storedIn: [String: String] = [:]
        let bundles = try await HTTP.get(collector, "/api/v1/bundles?limit=500").json["items"] as? [[String: Any]] ?? []
        for bundle in bundles {
            guard let bundleID = bundle["id"] as? Int else { continue }
            let files = try await HTTP.get(collector, "/api/v1/bundles/\(bundleID)/files").body
            let decoded = (try? JSONSerialization.jsonObject(with: files)) as? [[String: Any]] ?? []
            for file in decoded where file["kind"] as? String == "log" {
                guard let fileID = file["id"] as? Int, let path = file["path"] as? String else { continue }
                var bytes = Array(try await HTTP.get(collector, "/api/v1/files/\(fileID)/content").body)
                if path.hasSuffix(".gz") { bytes = (try? GzipData.decompress(bytes, limit: 64 << 20)) ?? [] }
                for tick in String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap(Self.tick) {
                    storedIn[tick] = "bundle \(bundleID) \(path)"
                }
            }
        }
        // "tick n=12 pid=345 (…)": runs of n per pid and place.
        var runs: [(pid: Substring, first: Int, last: Int, place: String)] = []
        for tick in missing {
            let words = tick.split(separator: " ")
            guard words.count >= 3, let n = Int(words[1].dropFirst(2)) else { continue }
            let place = storedIn[tick].map { "stored in \($0)" } ?? "never received"
            if let run = runs.last, run.pid == words[2], run.last + 1 == n, run.place == place {
                runs[runs.count - 1].last = n
            } else {
                runs.append((words[2], n, n, place))
            }
        }
        return runs.map { "\($0.pid) n=\($0.first)-\($0.last) (\($0.place))" }.joined(separator: ", ")
    }

    static func tick(_ line: Substring) -> String? {
        guard let range = line.range(of: "tick n=") else { return nil }
        return String(line[range.lowerBound...].prefix { $0 != "\"" && $0 != "}" })
            .trimmingCharacters(in: .whitespaces)
    }

    /// The app directory's files outside its logs, with their sizes: what a failed run left to send.
    static func listing(_ directory: String) -> [String] {
        let files = FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []
        return files.filter { !$0.hasPrefix("logs") }.sorted().compactMap { path in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(path)")
            guard attributes?[.type] as? FileAttributeType == .typeRegular else { return nil }
            return "\(path) (\(attributes?[.size] ?? 0))"
        }
    }

    /// Every search hit for `tick`, page by page.
    static func searchedTicks(_ collector: TestCollector) async throws -> [String] {
        var ticks: [String] = []
        var offset = 0
        while true {
            let page = try await HTTP.get(collector, "/api/v1/logs/search?q=tick&limit=500&offset=\(offset)").json
            let items = page["items"] as? [[String: Any]] ?? []
            ticks += items.compactMap { ($0["text"] as? String).flatMap { Self.tick(Substring($0)) } }
            guard items.count == 500 else { return ticks }
            offset += 500
        }
    }

    @Test("a line is searchable within 60 s of being logged; kill -9 mid-shipment, a restart: every line once")
    func liveLines() async throws {
        let scratch = TemporaryDirectory()
        defer { scratch.remove() }
        let collector = try await TestCollector.start()
        defer { Task { await collector.stop() } }
        let directory = "\(scratch.path)/app"
        let serve = { (seconds: String) in
            try Tool.start(
                "blackbox-example",
                [
                    directory, "--collector", collector.baseURL, "--key", collector.ingestKey, "--serve", seconds,
                    // Rotated every ~40 lines (4 KiB, the least Blackbox allows): segments end in archives, whose rest is shipped from them.
                    "--live-interval", "500", "--rotate-bytes", "4096",
                ])
        }
        let first = try serve("60")
        let started = ContinuousClock.now
        var searchable: Duration?
        while ContinuousClock.now - started < .seconds(60) {
            if try await !Self.searchedTicks(collector).isEmpty {
                searchable = ContinuousClock.now - started
                break
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        let latency = try #require(searchable, "no line searchable 60 s after the app started logging")
        // A line logged while the app runs (the 30th tick, 1.5 s in), not only what the start pass took.
        var later: Duration?
        while ContinuousClock.now - started < .seconds(62) {
            if try await Self.searchedTicks(collector).contains(where: { $0.hasPrefix("tick n=30 ") }) {
                later = ContinuousClock.now - started - .milliseconds(1_500)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let liveLatency = try #require(later, "a line logged 1.5 s in was not searchable within a minute")
        print("live logs: first line searchable \(latency) after start; a line logged 1.5 s in, \(liveLatency) after")
        // Shipping every 500 ms: a kill now lands while a segment is cut or in flight, or just between.
        try await Task.sleep(for: .milliseconds(Int.random(in: 100...1_500)))
        first.kill(SIGKILL)
        _ = try await first.wait()

        // The next start ships what the killed run left; the one after it, what the second left.
        let second = try await Tool.run(
            "blackbox-example",
            [
                directory, "--collector", collector.baseURL, "--key", collector.ingestKey, "--serve", "2",
                "--rotate-bytes", "4096",
            ])
        #expect(second.status == 0, "\(second.stderr)")
        let third = try await Tool.run(
            "blackbox-example", [directory, "--collector", collector.baseURL, "--key", collector.ingestKey])
        #expect(third.status == 0, "\(third.stderr)")
        await collector.server.indexPendingLogs()

        let logged = try Self.ticks(inLogs: DiagnosticsDirectory(directory).logs)
        let searched = try await Self.searchedTicks(collector)
        #expect(logged.count > 40 && Set(logged).count == logged.count, "\(logged.count) ticks logged")
        let archives = try FileManager.default.contentsOfDirectory(atPath: DiagnosticsDirectory(directory).logs)
            .filter { $0.contains("--") }
        #expect(!archives.isEmpty, "the app rotated its log file")
        var seen: [String: Int] = [:]
        for tick in searched { seen[tick, default: 0] += 1 }
        let missing = logged.filter { seen[$0] == nil }
        let duplicated = seen.filter { $0.value > 1 }.map(\.key)
        let whereMissing = missing.isEmpty ? "" : try await Self.locate(missing, at: collector)
        #expect(
            missing.isEmpty,
            """
            \(missing.count) of \(logged.count) lines not searchable: \(whereMissing); \
            the second start said: \(second.stdout.suffix(300)); the third: \(third.stdout.suffix(300)); \
            left in the app's directory: \(Self.listing(directory))
            """)
        var places: [String] = []
        if let first = duplicated.first, let pid = first.split(separator: " ").dropFirst(2).first {
            let query =
                "\(first.split(separator: " ")[1]) \(pid)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)
                ?? ""
            let hits =
                try await HTTP.get(collector, "/api/v1/logs/search?q=\(query)").json["items"] as? [[String: Any]] ?? []
            places = hits.map { "\($0["path"] ?? "?") file \($0["fileID"] ?? "?") line \($0["lineNumber"] ?? "?")" }
        }
        #expect(
            duplicated.isEmpty, "\(duplicated.count) lines found more than once: \(duplicated.prefix(5)), at \(places)")
    }
}
