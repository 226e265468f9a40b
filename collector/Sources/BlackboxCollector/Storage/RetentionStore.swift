import Foundation

/// What `RetentionService` deletes.
public protocol RetentionStore: Sendable {
    /// Deletes bundles received before `cutoff`, and each project's oldest bundles past
    /// `bytesPerProject` (its quota), with their files, occurrences and log lines, and the release
    /// health of days before `cutoff`; returns how many bundles, with the blobs no bundle references
    /// any more (the caller deletes them after checking `referencedBlobs` again). Gives the space back.
    func deleteBundles(receivedBefore cutoff: Date, beyondBytesPerProject bytesPerProject: Int64) async throws
        -> RetentionOutcome
    /// Which of `blobs` some bundle (of any project) references.
    func referencedBlobs(_ blobs: [String]) async throws -> Set<String>
}

extension RetentionStore {
    func deleteBundles(receivedBefore cutoff: Date) async throws -> RetentionOutcome {
        try await deleteBundles(receivedBefore: cutoff, beyondBytesPerProject: .max)
    }
}
