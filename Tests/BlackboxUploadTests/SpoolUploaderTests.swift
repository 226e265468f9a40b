#if Upload
    import AsyncHTTPClient
    import BlackboxTestSupport
    import Foundation
    import NIOCore
    import Synchronization
    import Testing

    @testable import BlackboxUpload

    /// The waits the uploader asked for (the tests do not really sleep).
    final class Waits: Sendable {
        let list = Mutex<[Duration]>([])
    }

    @Suite struct SpoolUploaderTests {
        /// A spool holding `count` bundles of a small log each, oldest first.
        func spool(in scratch: TemporaryDirectory, bundles count: Int) throws -> (Spool, [UUID]) {
            let spool = Spool(directory: scratch.path + "/bundles", rejectedDirectory: scratch.path + "/rejected")
            var ids: [UUID] = []
            for index in 0..<count {
                let log = scratch.write("in/\(index).log", "line \(index)\n")
                let written = try BundleWriter(app: .init(name: "shop"), host: "h").write(
                    [BundleItem(sourcePath: log, entryPath: "logs/app.log", kind: .log, range: 0..<7)],
                    into: spool.directory)
                // Distinct modification times keep "oldest first" well defined.
                let path = written[0].path
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSinceNow: Double(index - count))], ofItemAtPath: path)
                ids.append(written[0].id)
            }
            return (spool, ids)
        }

        func uploader(_ spool: Spool, _ server: String, maxAttempts: Int? = nil, waits: Waits? = nil) throws
            -> SpoolUploader
        {
            var retry = RetryPolicy()
            retry.maxAttempts = maxAttempts
            var uploader = SpoolUploader(
                spool: spool, transport: CollectorClient(endpoint: try CollectorEndpoint(url: server, key: "k-123")),
                retry: retry)
            uploader.random = { 1 }
            uploader.sleep = { duration in waits?.list.withLock { $0.append(duration) } }
            return uploader
        }

        @Test func serverErrorsAreRetriedWithBackoffUnderTheSameUploadID() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (spool, ids) = try spool(in: scratch, bundles: 2)
            let server = try await StubCollector.start(answers: [
                (503, "busy"), (500, "oops"), (201, "{}"), (200, "{}"),
            ])
            let waits = Waits()
            let summary = try await uploader(spool, server.baseURL, waits: waits).drain()
            await server.stop()

            #expect(
                summary
                    == {
                        var s = SpoolUploader.Summary()
                        s.uploaded = 2
                        s.duplicates = 1
                        return s
                    }())
            let uploads = server.received.map(\.uploadID)
            let first = ids[0].uuidString.lowercased()
            #expect(uploads == [first, first, first, ids[1].uuidString.lowercased()])
            #expect(server.received.allSatisfy { $0.authorization == "Bearer k-123" && $0.path == "/api/v1/bundles" })
            #expect(server.received.allSatisfy { $0.bodyBytes > 100 })
            #expect(waits.list.withLock { $0 } == [.seconds(1), .seconds(2)])
            #expect(spool.pending().isEmpty)
        }

        @Test func finalRefusalsAreKeptWithTheirReasonAndNeverResent() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (spool, ids) = try spool(in: scratch, bundles: 3)
            let server = try await StubCollector.start(answers: [
                (413, #"{"error":"body_too_large","message":"the body is larger than the limit"}"#),
                (422, #"{"error":"corrupt_zip","message":"damaged"}"#), (400, "plain text"),
            ])
            let summary = try await uploader(spool, server.baseURL).drain()
            await server.stop()

            #expect(summary.rejected == 3 && summary.uploaded == 0 && summary.stoppedBy == nil)
            #expect(server.received.count == 3)
            #expect(spool.pending().isEmpty)
            let rejected = spool.rejected()
            #expect(
                Set(rejected.map(\.path))
                    == Set(ids.map { "\(spool.rejectedDirectory)/\($0.uuidString.lowercased()).zip" })
            )
            #expect(rejected.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
            let answers = Set(rejected.map(\.rejection.answer))
            #expect(
                answers.contains(
                    ServerAnswer(status: 413, code: "body_too_large", message: "the body is larger than the limit")))
            #expect(answers.contains(ServerAnswer(status: 400, code: nil, message: "plain text")))
        }

        @Test func aRefusedKeyStopsThePassAndKeepsEveryBundle() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (spool, _) = try spool(in: scratch, bundles: 2)
            let server = try await StubCollector.start(answers: [(401, #"{"error":"invalid_key","message":"unknown"}"#)]
            )
            let summary = try await uploader(spool, server.baseURL).drain()
            await server.stop()
            #expect(
                summary.stoppedBy
                    == SpoolUploader.StopReason.unauthorized(
                        ServerAnswer(status: 401, code: "invalid_key", message: "unknown")))
            #expect(summary.remaining == 2)
            #expect(server.received.count == 1)
            #expect(spool.pending().count == 2)
        }

        @Test func anUnreachableCollectorEndsThePassAfterMaxAttemptsAndLosesNothing() async throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let (spool, _) = try spool(in: scratch, bundles: 2)
            // A port nothing listens on: bind a server, note its port, stop it.
            let closed = try await StubCollector.start()
            await closed.stop()
            let waits = Waits()
            let summary = try await uploader(spool, closed.baseURL, maxAttempts: 3, waits: waits).drain()
            guard case .unreachable(let reason) = summary.stoppedBy else {
                Issue.record("expected unreachable, got \(String(describing: summary.stoppedBy))")
                return
            }
            #expect(reason == "connection refused (is the collector running?)", "\(reason)")
            #expect(summary.remaining == 2)
            #expect(waits.list.withLock { $0 }.count == 2)
            #expect(spool.pending().count == 2)
        }

        @Test func transportErrorsAreDescribedByTheirTypeNotTheirText() {
            #expect(CollectorClient.describe(HTTPClientError.connectTimeout) == "connecting timed out")
            #expect(CollectorClient.describe(HTTPClientError.deadlineExceeded) == "the request timed out")
            #expect(
                CollectorClient.describe(HTTPClientError.remoteConnectionClosed)
                    == "the collector closed the connection")
            #expect(
                CollectorClient.describe(IOError(errnoCode: ECONNREFUSED, reason: "connect"))
                    == "connection refused (is the collector running?)")
            #expect(
                CollectorClient.describe(IOError(errnoCode: EHOSTUNREACH, reason: "connect")).hasPrefix(
                    "cannot connect: "))
        }

        @Test func backoffGrowsToItsCapWithJitterInTheUpperHalf() {
            var policy = RetryPolicy()
            policy.initialDelay = .seconds(1)
            policy.maxDelay = .seconds(60)
            #expect(policy.delay(afterFailures: 1, random: 1) == .seconds(1))
            #expect(policy.delay(afterFailures: 1, random: 0) == .milliseconds(500))
            #expect(policy.delay(afterFailures: 4, random: 1) == .seconds(8))
            #expect(policy.delay(afterFailures: 20, random: 1) == .seconds(60))
            #expect(policy.delay(afterFailures: 20, random: 0) == .seconds(30))
            #expect(policy.delay(afterFailures: 1000, random: 0.5) == .seconds(45))
        }
    }
#endif
