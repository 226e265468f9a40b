import Foundation

/// What `RetentionService` deletes.
public protocol RetentionStore: Sendable {
    /// Deletes bundles received before `cutoff` with their files, occurrences and log lines, and
    /// returns how many, with the blobs no bundle references any more (the caller deletes them after
    /// checking `referencedBlobs` again). Gives the space back.
    func deleteBundles(receivedBefore cutoff: Date) async throws -> RetentionOutcome
    /// Which of `blobs` some bundle (of any project) references.
    func referencedBlobs(_ blobs: [String]) async throws -> Set<String>
}
