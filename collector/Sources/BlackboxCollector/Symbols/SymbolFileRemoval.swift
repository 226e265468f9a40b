import Foundation

/// Deletes a project's symbol files: the records first, then each blob no other record (of any
/// project: blobs are named by content) references, with retention's protocol against an upload of
/// the same bytes committing at that moment (`DirectoryBlobStore`, "Deleting blobs safely").
struct SymbolFileRemoval: Sendable {
    let index: any SymbolIndex
    let blobs: any BlobStorage

    /// The deleted files (empty when the project has none of that build-id, or of that sha256).
    func remove(buildID: String, sha256: String?, in scope: ProjectScope) async throws -> [SymbolFile] {
        let deleted = try await index.deleteSymbolFiles(buildID: buildID, sha256: sha256, in: scope)
        let candidates = Set(deleted.map(\.blob)).sorted()
        guard !candidates.isEmpty else { return deleted }
        let referencedBefore = try await index.referencedSymbolBlobs(candidates)
        try await blobs.deleteUnreferenced(
            candidates.filter { !referencedBefore.contains($0) }, referenced: index.referencedSymbolBlobs)
        return deleted
    }
}
