import BlackboxFormat
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The stages every upload goes through, whatever its format and endpoint: admission (key, slots,
/// quota, length, disk: `UploadAdmission`), reception (a temporary file and its sha256:
/// `BodyReceiver`), the endpoint's format's inspection into a plan, then the group commit (durable
/// blob, one transaction) before the endpoint answers. An `IngestEndpoint` strings them together.
struct IngestService: Sendable {
    let store: any CollectorStore
    let admission: UploadAdmission
    let receiver: BodyReceiver
    let committer: GroupCommitter
    let metrics: CollectorMetrics
    let indexerWakeup: @Sendable () -> Void
    /// Reports whose frames lack debug-info names wait for the symbolication service.
    let symbolicationWakeup: @Sendable () -> Void
    /// Occurrences (`AlertRules`) and request counts (`ReleaseRegressionRule`) may have queued alerts.
    let alertsWakeup: @Sendable () -> Void
    /// Called with `true` as an upload starts and `false` as it ends: background work (the log
    /// indexer) steps back while uploads are being received.
    let uploadActivity: @Sendable (_ started: Bool) -> Void
    let logger = Logger(label: "collector.ingest")

    /// The last stage, for every format: from here the committer owns the body's temporary file (it
    /// makes it durable with the others of its batch, then indexes them all in one transaction); then
    /// the background services that the new bundle gives work are woken.
    func commit(_ inspection: FormatInspection, body: ReceivedBody, uploadID: String?) async throws -> IndexOutcome {
        let plan = inspection.plan
        metrics.droppedItems(inspection.droppedItems)
        if plan.implausibleSessionSummaries > 0 {
            metrics.rejected(reason: "implausible_sessions")
            logger.notice(
                "upload \(uploadID ?? "without an id"): \(plan.implausibleSessionSummaries) session summaries dropped as impossible for one installation"
            )
        }
        let outcome: IndexOutcome
        do {
            outcome = try await committer.submit(plan, temporaryPath: body.path)
        } catch let error as S3Error {
            throw APIError.blobStoreUnavailable(error)
        }
        if case .stored(let record) = outcome {
            admission.usage.stored(record.size, in: plan.bundle.projectID)
            if plan.files.contains(where: { $0.kind == .log }) { indexerWakeup() }
            if plan.occurrences.contains(where: \.needsSymbolication) { symbolicationWakeup() }
            if !plan.occurrences.isEmpty || plan.sessions.contains(where: { $0.requests.total > 0 }) {
                alertsWakeup()
            }
            logger.info(
                "stored bundle \(record.id): \(body.size) bytes, \(plan.files.count) files, \(plan.bundle.reportCount) reports"
            )
        }
        return outcome
    }
}
