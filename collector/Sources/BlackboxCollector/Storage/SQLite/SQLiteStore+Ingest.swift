import Foundation
import GRDB

/// `BundleIndex.existingBundle`, the one lookup SQLite answers its own way.
extension SQLiteStore {
    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        try existingBundleOnThisThread(projectID: projectID, uploadID: uploadID, sha256: sha256)
    }

    /// Synchronous on purpose: every upload asks, and an async read costs two thread hops, more than
    /// the indexed lookup itself (profiled: about a fifth of the 10 KB upload rate). It runs on the
    /// calling thread through a connection nothing else uses, so the wait is at most another
    /// lookup. Never through the pool's readers: those are also held by async reads, and two
    /// cooperative threads blocked waiting for one deadlocked the server under load.
    private func existingBundleOnThisThread(projectID: Int64, uploadID: String?, sha256: String) throws
        -> BundleRecord?
    {
        try uploadLookup.read { db in
            try IngestTransaction.existing(
                GRDBConnection(db: db), projectID: projectID, uploadID: uploadID, sha256: sha256)
        }
    }
}
