import Foundation

/// One upload format: how a received body becomes the plan the store applies, and how a file is read
/// back out of the stored blob (downloads, the log viewer, the log indexer). Blackbox's zip bundle is
/// one (`ZipBundleFormat`), the Sentry envelope another (`SentryEnvelopeFormat`); each is received
/// by an `IngestEndpoint`.
protocol BundleFormat: Sendable {
    /// The stored blob's extension, which says how to read it back (`BundleReader`).
    static var blobExtension: String { get }

    /// Inspects the body (never trusting it) into the plan and what the answer needs; refusals are
    /// `APIError`s.
    func inspect(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws
        -> FormatInspection

    /// Hands the bytes of the file at `path` in the blob stored at `blobFile` to `consumer`, chunk by
    /// chunk, stopping with `BundleReader.Failure.tooLarge` past `maxBytes`.
    func extract(
        _ path: String, fromBlobAt blobFile: String, chunkBytes: Int, maxBytes: Int, consumer: (Data) throws -> Void
    ) throws

    /// Several whole files of one blob, opening it once; a file that cannot be read gets its error.
    func contents(of paths: Set<String>, fromBlobAt blobFile: String, maxBytes: Int) throws
        -> [String: Result<Data, any Error>]
}

extension BundleFormat {
    /// The name of the blob holding a body of this format with these bytes.
    static func blobName(sha256: String) -> String { BlobName.of(sha256: sha256, fileExtension: blobExtension) }

    /// `data` handed to `consumer` in chunks of at most `chunkBytes`: `extract` for a format whose
    /// files are read whole (an envelope's item, an OTLP request's lines).
    static func handOn(_ data: Data, inChunksOf chunkBytes: Int, to consumer: (Data) throws -> Void) rethrows {
        var offset = data.startIndex
        while offset < data.endIndex {
            let end = min(offset + chunkBytes, data.endIndex)
            try consumer(data[offset..<end])
            offset = end
        }
    }
}

/// What a format's inspection gives its endpoint: the plan the store applies, and what the answer to
/// the sender and the metrics need, so that no endpoint reaches past `BundleFormat` to its format.
struct FormatInspection: Sendable {
    var plan: IngestPlan
    /// The id the sender gave what it sent, which the answer echoes (a Sentry event's `event_id`).
    var senderID: String? = nil
    /// Items accepted but not stored, by type (a Sentry envelope's transactions, replays, …).
    var droppedItems: [String: Int] = [:]
    /// Records of a batch (an OTLP request) taken and refused, which the answer reports.
    var records: RecordCounts? = nil

    /// Whether the upload stores nothing but its sender's counts of what it lost (Sentry client
    /// reports): no report, session, file or log.
    var holdsLossesOnly: Bool {
        !plan.losses.isEmpty && plan.occurrences.isEmpty && plan.sessions.isEmpty && plan.files.isEmpty
    }

    struct RecordCounts: Sendable, Equatable {
        var accepted: Int
        var rejected: Int
        /// Why the refused ones were refused.
        var reason: String?
    }
}
