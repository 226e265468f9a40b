import Foundation

/// One upload format: how a received body becomes the plan the store applies, and how a file is read
/// back out of the stored blob (downloads, the log viewer, the log indexer). Today's zip bundle is
/// one (`ZipBundleFormat`); a new protocol's route is admission, reception, its format and the same
/// group commit.
protocol BundleFormat: Sendable {
    /// The stored blob's extension, which says how to read it back (`BundleReader`).
    static var blobExtension: String { get }

    /// Inspects the body (never trusting it) into the plan; refusals are `APIError`s.
    func plan(_ body: ReceivedBody, for upload: UploadAdmission.Admitted, receivedAt: Date) async throws -> IngestPlan

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
}
