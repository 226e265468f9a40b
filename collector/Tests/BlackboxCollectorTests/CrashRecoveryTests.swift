import BlackboxFormat
import BlackboxTestSupport
import CollectorTestSupport
import Crypto
import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Collector killed with SIGKILL")
struct CrashRecoveryTests {
    struct Upload: Sendable {
        var id: String
        var bundle: Data
        var sha256: String
    }

    @Test("every acknowledged upload survives SIGKILL whole and indexed; retries are stored once")
    func killDuringUploads() async throws {
        let seed =
            ProcessInfo.processInfo.environment["BLACKBOX_TEST_SEED"].flatMap(UInt64.init)
            ?? UInt64.random(in: 1...1_000_000)
        note("collector SIGKILL test seed: \(seed) (set BLACKBOX_TEST_SEED to repeat)")
        var random = SplitMix64(seed: seed)
        let scratch = TemporaryDirectory(prefix: "collector-kill")
        defer { scratch.remove() }
        let directory = scratch.path
        let uploads = try (0..<240).map { index -> Upload in
            let report = Reports.crash(functions: ["shop.f\(index % 7)() -> ()"], version: "1.\(index % 3)")
            let log = Data((0..<50).map { "upload \(index) line \($0) \(random.next())\n" }.joined().utf8)
            let bundle = try BundleArchive.make(app: report.app, host: "h", reports: [report], logs: [("app.log", log)])
            return Upload(id: UUID().uuidString.lowercased(), bundle: bundle, sha256: BundleArchive.sha256(bundle))
        }

        note("starting collector")
        let first = try await CollectorProcess.start(dataDirectory: directory)
        note("collector at \(first.baseURL)")
        let acknowledged = AckList()
        // Kill once a random number of uploads were acknowledged, plus a random moment more, so the
        // kill lands in the middle of the stream whatever the machine's speed.
        let ackedBeforeKill = 10 + Int(random.next() % 60)
        let extraDelay = Int(random.next() % 150)
        let senders = Task {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for upload in uploads.enumerated().filter({ $0.offset % 8 == worker }).map(\.element) {
                            guard
                                let response = try? await HTTP.request(
                                    "\(first.baseURL)/api/v1/bundles", method: .POST,
                                    headers: [
                                        ("Authorization", "Bearer \(first.ingestKey)"), ("Upload-Id", upload.id),
                                    ],
                                    body: upload.bundle)
                            else { return }  // the server is gone
                            if response.status == 201 || response.status == 200 { acknowledged.add(upload.id) }
                        }
                    }
                }
            }
        }
        while acknowledged.all.count < ackedBeforeKill, !first.hasExited {
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(extraDelay))
        first.kill(SIGKILL)
        await senders.value
        let acked = acknowledged.all
        note(
            "acknowledged \(acked.count) of \(uploads.count) before SIGKILL (\(ackedBeforeKill) acks + \(extraDelay) ms)"
        )
        #expect(acked.count > 0, "the kill came after some uploads were acknowledged")

        let second = try await CollectorProcess.start(dataDirectory: directory)
        note("restarted at \(second.baseURL)")
        defer { second.kill(SIGTERM) }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(directory)/tmp").isEmpty,
            "half-received uploads are cleaned up")
        let byID = Dictionary(uniqueKeysWithValues: uploads.map { ($0.id, $0) })
        for id in acked {
            let upload = try #require(byID[id])
            // Present: the same Upload-Id answers "duplicate" with the stored bundle.
            let retry = try await HTTP.request(
                "\(second.baseURL)/api/v1/bundles", method: .POST,
                headers: [("Authorization", "Bearer \(second.ingestKey)"), ("Upload-Id", id)], body: upload.bundle)
            #expect(retry.status == 200 && retry.json["duplicate"] as? Bool == true, "\(id): \(retry.text)")
            #expect(retry.json["sha256"] as? String == upload.sha256)
            #expect(retry.json["reports"] as? Int == 1 && retry.json["files"] as? Int == 3, "indexed with its files")
            // Whole: the blob on disk hashes to what was sent.
            let blob = "\(directory)/blobs/\(ZipBundleFormat.blobName(sha256: upload.sha256))"
            let stored = try #require(FileManager.default.contents(atPath: blob))
            #expect(BundleArchive.sha256(stored) == upload.sha256)
        }
        // Retrying everything (what an uploader does) stores each bundle exactly once.
        let statuses = await withTaskGroup(of: [Int].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var statuses: [Int] = []
                    for upload in uploads.enumerated().filter({ $0.offset % 8 == worker }).map(\.element) {
                        let response = try? await HTTP.request(
                            "\(second.baseURL)/api/v1/bundles", method: .POST,
                            headers: [("Authorization", "Bearer \(second.ingestKey)"), ("Upload-Id", upload.id)],
                            body: upload.bundle)
                        statuses.append(response?.status ?? 0)
                    }
                    return statuses
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 201 }, "\(Set(statuses))")
        var total = 0
        var offset = 0
        while true {
            let page = try await HTTP.request(
                "\(second.baseURL)/api/v1/bundles?limit=500&offset=\(offset)",
                headers: [("Authorization", "Bearer \(second.adminToken)")])
            let items = page.json["items"] as? [[String: Any]] ?? []
            total += items.count
            offset += 500
            if items.count < 500 { break }
        }
        #expect(total == uploads.count, "each upload stored exactly once")
        let groups = try await HTTP.request(
            "\(second.baseURL)/api/v1/groups", headers: [("Authorization", "Bearer \(second.adminToken)")])
        let counts = (groups.json["items"] as? [[String: Any]] ?? []).compactMap { $0["count"] as? Int }
        #expect(counts.reduce(0, +) == uploads.count, "every report counted once")
    }
}

final class AckList: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [String] = []
    func add(_ id: String) { lock.withLock { ids.append(id) } }
    var all: [String] { lock.withLock { ids } }
}

/// Progress on stderr (unbuffered), so a slow run shows where it is.
func note(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
