import Foundation
import GRDB

/// `BundleIndex`: applying ingest plans.
extension SQLiteStore {

    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        try existingBundleOnThisThread(projectID: projectID, uploadID: uploadID, sha256: sha256)
    }

    /// Synchronous on purpose: every upload asks, and an async read costs two thread hops, more than
    /// the indexed lookup itself (profiled: about a fifth of the 10 KB upload rate). It runs on the
    /// calling thread through a connection nothing else uses, so the wait is at most another
    /// lookup. Never through the pool's readers: those are also held by async reads, and two
    /// cooperative threads blocked waiting for one deadlocked the server under load.
    func existingBundleOnThisThread(projectID: Int64, uploadID: String?, sha256: String) throws
        -> BundleRecord?
    {
        try uploadLookup.read { db in try Self.existing(db, projectID: projectID, uploadID: uploadID, sha256: sha256) }
    }

    static func existing(_ db: Database, projectID: Int64, uploadID: String?, sha256: String) throws
        -> BundleRecord?
    {
        if let uploadID,
            let row = try db.cachedRow(
                sql: "SELECT * FROM bundles WHERE project_id = ? AND upload_id = ?",
                arguments: [projectID, uploadID])
        {
            return bundle(row)
        }
        return try db.cachedRow(
            sql: "SELECT * FROM bundles WHERE project_id = ? AND sha256 = ?", arguments: [projectID, sha256]
        ).map(bundle)
    }

    public func apply(_ plans: [IngestPlan]) async throws -> [IndexOutcome] {
        try await pool.write { db in
            try plans.map { try Self.apply($0, in: db) }
        }
    }

    /// In the order `IngestPlan` documents.
    static func apply(_ plan: IngestPlan, in db: Database) throws -> IndexOutcome {
        let new = plan.bundle
        if let existing = try existing(db, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256) {
            return .duplicate(existing)
        }
        try db.executeCached(
            sql: """
                INSERT INTO bundles (project_id, upload_id, sha256, size, blob, app_name, app_version, host,
                    has_manifest, received_at, file_count, report_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                new.projectID, new.uploadID, new.sha256, new.size, new.blob, new.appName, new.appVersion, new.host,
                new.hasManifest, new.receivedAt.timeIntervalSince1970, new.fileCount, new.reportCount,
            ])
        let bundleID = db.lastInsertedRowID
        for file in plan.files {
            try db.executeCached(
                sql:
                    "INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [bundleID, file.path, file.kind.rawValue, file.size, file.sha256, file.isIndexed ? 1 : 0])
        }
        for occurrence in plan.occurrences {
            try insert(occurrence, bundleID: bundleID, projectID: new.projectID, receivedAt: new.receivedAt, in: db)
        }
        try addSessions(plan, in: db)
        guard let row = try db.cachedRow(sql: "SELECT * FROM bundles WHERE id = ?", arguments: [bundleID]) else {
            throw StorageError.notFound("bundle \(bundleID)")
        }
        return .stored(bundle(row))
    }

    static func insert(
        _ occurrence: IngestPlan.OccurrenceRow, bundleID: Int64, projectID: Int64, receivedAt: Date, in db: Database
    ) throws {
        if try db.cachedValue(
            Bool.self, sql: "SELECT 1 FROM reports WHERE project_id = ? AND report_uuid = ?",
            arguments: [projectID, occurrence.reportUUID])
            == true
        {
            return
        }
        let occurred = occurrence.occurredAt.timeIntervalSince1970
        let (groupID, createdGroup) = try group(
            for: occurrence.signature, kind: occurrence.kind, occurredAt: occurred, projectID: projectID, in: db)
        try db.executeCached(
            sql: """
                INSERT INTO reports (project_id, bundle_id, group_id, report_uuid, kind, occurred_at, app_version, host,
                    reason, json, symbolication)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                projectID, bundleID, groupID, occurrence.reportUUID, occurrence.kind, occurred, occurrence.appVersion,
                occurrence.host, occurrence.reason, occurrence.json, occurrence.needsSymbolication ? "pending" : nil,
            ])
        let reportID = db.lastInsertedRowID
        for image in occurrence.images {
            try db.executeCached(
                sql: "INSERT INTO report_images (report_id, project_id, build_id, resolved) VALUES (?, ?, ?, ?)",
                arguments: [reportID, projectID, image.buildID, image.resolved])
        }
        try recordVersion(occurrence.appVersion, projectID: projectID, at: receivedAt, in: db)
        let counted = try count(
            reportID: reportID, occurredAt: occurred, versionKey: occurrence.versionKey, hostKey: occurrence.hostKey,
            in: groupID, db)
        let regressedAt = try triage(
            occurrence, counted: counted, groupID: groupID, projectID: projectID, at: receivedAt, in: db)
        try queueAlerts(
            groupID: groupID, createdGroup: createdGroup, regressedAt: regressedAt, projectID: projectID,
            at: receivedAt, in: db)
    }

    /// The id of the project's group with this signature, created (with count 0) when new; `created`
    /// when this transaction made it.
    static func group(
        for signature: CrashSignature.Result, kind: String, occurredAt occurred: Double, projectID: Int64,
        in db: Database
    ) throws -> (id: Int64, created: Bool) {
        try db.executeCached(
            sql: """
                INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                    first_seen, last_seen)
                VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
                ON CONFLICT (project_id, signature) DO NOTHING
                """,
            arguments: [
                projectID, signature.hash, CrashSignature.version, signature.text, kind, signature.title, occurred,
                occurred,
            ])
        let created = db.changesCount > 0
        guard
            let groupID = try db.cachedValue(
                Int64.self, sql: "SELECT id FROM crash_groups WHERE project_id = ? AND signature = ?",
                arguments: [projectID, signature.hash])
        else { throw StorageError.notFound("group \(signature.hash)") }
        return (groupID, created)
    }

    /// Counts one occurrence (the report `reportID`) in a group: count, first and last seen, latest
    /// report, version and host tallies. Returns the group's count and status columns afterwards.
    @discardableResult
    static func count(
        reportID: Int64, occurredAt occurred: Double, versionKey: String, hostKey: String, in groupID: Int64,
        _ db: Database
    ) throws -> Row {
        guard
            let counted = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        UPDATE crash_groups SET count = count + 1,
                            first_seen = min(first_seen, ?),
                            latest_report_id = CASE WHEN ? >= last_seen OR latest_report_id IS NULL THEN ? ELSE latest_report_id END,
                            last_seen = max(last_seen, ?)
                        WHERE id = ?
                        RETURNING count, \(statusColumns)
                        """),
                arguments: [occurred, occurred, reportID, occurred, groupID])
        else { throw StorageError.notFound("group \(groupID)") }
        // Past the limit of distinct values, a new one is counted under `other` (see CrashGroup).
        let limit = CrashGroup.maxTrackedValues
        try db.executeCached(
            sql: """
                INSERT INTO group_versions (group_id, app_version, count)
                SELECT ?, CASE WHEN EXISTS (SELECT 1 FROM group_versions WHERE group_id = ? AND app_version = ?)
                    OR (SELECT count(*) FROM group_versions WHERE group_id = ?) < ? THEN ? ELSE ? END, 1
                WHERE true
                ON CONFLICT (group_id, app_version) DO UPDATE SET count = count + 1
                """,
            arguments: [groupID, groupID, versionKey, groupID, limit, versionKey, CrashGroup.otherValues])
        try db.executeCached(
            sql: """
                INSERT INTO group_hosts (group_id, host, count)
                SELECT ?, CASE WHEN EXISTS (SELECT 1 FROM group_hosts WHERE group_id = ? AND host = ?)
                    OR (SELECT count(*) FROM group_hosts WHERE group_id = ?) < ? THEN ? ELSE ? END, 1
                WHERE true
                ON CONFLICT (group_id, host) DO UPDATE SET count = count + 1
                """,
            arguments: [groupID, groupID, hostKey, groupID, limit, hostKey, CrashGroup.otherValues])
        return counted
    }
}
