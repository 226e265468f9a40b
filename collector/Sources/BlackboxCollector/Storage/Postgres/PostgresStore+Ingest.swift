/// `BundleIndex.existingBundle`.
extension PostgresStore {
    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        try await read { connection in
            try IngestTransaction.existing(connection, projectID: projectID, uploadID: uploadID, sha256: sha256)
        }
    }
}
