#if Upload
    import Blackbox
    import BlackboxTestSupport
    import Foundation
    import Testing

    @testable import BlackboxUpload

    /// The spool is capped while the collector is unreachable (security review 2026-11-27, finding 9):
    /// log-only bundles past its bytes or age go, oldest first; a bundle with a report never does.
    @Suite struct SpoolCapTests {
        let scratch = TemporaryDirectory()
        var spool: Spool { Spool(directory: scratch.path + "/spool", rejectedDirectory: scratch.path + "/rejected") }

        /// A real bundle (BundleWriter's zip) of `bytes` of log, with a report when asked, written
        /// `age` ago.
        func bundle(logBytes: Int, report: Bool = false, age: TimeInterval = 0) throws -> Spool.Bundle {
            let log = scratch.write(
                "in/\(UUID().uuidString).log", Data((0..<logBytes).map { UInt8(truncatingIfNeeded: $0 * 7919 >> 3) }))
            var items = [BundleItem(sourcePath: log, entryPath: "logs/app.log", kind: .log, range: 0..<Int64(logBytes))]
            if report {
                let path = scratch.write("in/crash-\(UUID().uuidString).json", "{\"kind\":\"crash\"}")
                items.append(
                    BundleItem(sourcePath: path, entryPath: "reports/crash-1.json", kind: .report, range: 0..<16))
            }
            let written = try #require(
                try BundleWriter(app: .init(name: "shop"), host: "web-1").write(items, into: spool.directory).first)
            let modified = Date().addingTimeInterval(-age)
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: written.path)
            return try #require(spool.pending().first { $0.path == written.path })
        }

        @Test("past its bytes, the oldest log-only bundles go; a report's bundle stays however old")
        func bytes() throws {
            defer { scratch.remove() }
            let crash = try bundle(logBytes: 40_000, report: true, age: 400)
            let oldest = try bundle(logBytes: 40_000, age: 300)
            let older = try bundle(logBytes: 40_000, age: 200)
            let newest = try bundle(logBytes: 40_000, age: 100)
            let total = [crash, oldest, older, newest].reduce(Int64(0)) { $0 + $1.size }
            // Room for all but about one bundle.
            let pruned = spool.enforce(SpoolCap(maxBytes: total - newest.size / 2, maxAge: nil))
            #expect(pruned.dropped.map(\.path) == [oldest.path])
            #expect(spool.pending().map(\.path) == [crash.path, older.path, newest.path])
            // A cap smaller than the report's bundle alone: every log-only bundle goes, the report stays.
            spool.enforce(SpoolCap(maxBytes: 1, maxAge: nil))
            #expect(spool.pending().map(\.path) == [crash.path])
        }

        @Test("past its age, log-only bundles go; under both caps nothing is touched")
        func age() throws {
            defer { scratch.remove() }
            let stale = try bundle(logBytes: 1_000, age: 3 * 86_400)
            let staleCrash = try bundle(logBytes: 1_000, report: true, age: 3 * 86_400)
            let fresh = try bundle(logBytes: 1_000, age: 60)
            #expect(spool.enforce(SpoolCap(maxBytes: 1 << 30, maxAge: .seconds(7 * 86_400))).dropped.isEmpty)
            let pruned = spool.enforce(SpoolCap(maxBytes: 1 << 30, maxAge: .seconds(86_400)))
            #expect(pruned.dropped.map(\.path) == [stale.path])
            #expect(Set(spool.pending().map(\.path)) == [staleCrash.path, fresh.path])
        }

        @Test("the default is the log retention's; refused bundles are kept up to their count, the newest")
        func retentionAndRejected() throws {
            defer { scratch.remove() }
            var retention = RetentionPolicy()
            retention.maxTotalBytes = 1 << 20
            retention.maxAge = .seconds(3_600)
            #expect(SpoolCap(retention: retention) == SpoolCap(maxBytes: 1 << 20, maxAge: .seconds(3_600)))
            var refused: [String] = []
            for minutesAgo in [50, 40, 30, 20, 10] {
                let waiting = try bundle(logBytes: 100)
                try spool.reject(
                    waiting, answer: ServerAnswer(status: 413, code: "quota_exceeded", message: "over the quota"))
                let answer = "\(spool.rejectedDirectory)/\(waiting.id.uuidString.lowercased()).json"
                try FileManager.default.setAttributes(
                    [.modificationDate: Date().addingTimeInterval(Double(-60 * minutesAgo))], ofItemAtPath: answer)
                refused.append(String(answer.dropLast(".json".count)) + ".zip")
            }
            var cap = SpoolCap(maxBytes: nil, maxAge: nil)
            cap.maxRejected = 2
            #expect(spool.enforce(cap).rejectedRemoved == 3)
            #expect(Set(spool.rejected().map(\.path)) == Set(refused.suffix(2)), "the two refused last")
            #expect(scratch.files(in: "rejected").count == 4, "each refused bundle with its answer")
        }
    }
#endif
