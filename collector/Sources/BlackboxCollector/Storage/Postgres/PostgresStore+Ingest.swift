import Foundation
import Logging
import PostgresNIO

/// `BundleIndex`: applying ingest plans, safe against other instances storing the same upload or
/// report at the same time.
extension PostgresStore {

    public func existingBundle(projectID: Int64, uploadID: String?, sha256: String) async throws -> BundleRecord? {
        let logger = self.logger
        return try await client.withConnection { connection in
            try await Self.existing(
                connection, projectID: projectID, uploadID: uploadID, sha256: sha256, logger: logger)
        }
    }

    static func existing(
        _ connection: PostgresConnection, projectID: Int64, uploadID: String?, sha256: String, logger: Logger
    ) async throws -> BundleRecord? {
        if let uploadID,
            let found = try await rows(
                connection, "SELECT * FROM bundles WHERE project_id = \(projectID) AND upload_id = \(uploadID)",
                logger: logger, bundle
            ).first
        {
            return found
        }
        return try await rows(
            connection, "SELECT * FROM bundles WHERE project_id = \(projectID) AND sha256 = \(sha256)", logger: logger,
            bundle
        ).first
    }

    public func apply(_ plans: [IngestPlan]) async throws -> [IndexOutcome] {
        try await transaction { connection, logger in
            var outcomes: [IndexOutcome] = []
            for plan in plans { outcomes.append(try await Self.apply(plan, connection, logger)) }
            return outcomes
        }
    }

    /// In the order `IngestPlan` documents.
    static func apply(_ plan: IngestPlan, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> IndexOutcome
    {
        let new = plan.bundle
        if let existing = try await existing(
            connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256, logger: logger)
        {
            return .duplicate(existing)
        }
        // Another instance may be storing the same upload right now: the unique constraints make
        // this insert wait for it, and then do nothing.
        let inserted = try await rows(
            connection,
            """
            INSERT INTO bundles (project_id, upload_id, sha256, size, blob, app_name, app_version, host,
                has_manifest, received_at, file_count, report_count)
            VALUES (\(new.projectID), \(new.uploadID), \(new.sha256), \(new.size), \(new.blob), \(new.appName),
                \(new.appVersion), \(new.host), \(new.hasManifest), \(new.receivedAt.timeIntervalSince1970),
                \(Int64(new.fileCount)), \(Int64(new.reportCount)))
            ON CONFLICT DO NOTHING RETURNING *
            """, logger: logger, bundle)
        guard let record = inserted.first else {
            guard
                let existing = try await existing(
                    connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256, logger: logger)
            else { throw StorageError.notFound("bundle \(new.sha256) after a conflict") }
            return .duplicate(existing)
        }
        let day = Self.day(new.receivedAt)
        for file in plan.files {
            try await connection.query(
                """
                INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed, received_day)
                VALUES (\(record.id), \(file.path), \(file.kind.rawValue), \(file.size), \(file.sha256),
                    \(file.isIndexed), \(day)::date)
                """, logger: logger)
        }
        for occurrence in plan.occurrences {
            try await insert(
                occurrence, bundleID: record.id, projectID: new.projectID, receivedAt: new.receivedAt, connection,
                logger)
        }
        try await addSessions(plan, connection, logger)
        return .stored(record)
    }

    static func insert(
        _ occurrence: IngestPlan.OccurrenceRow, bundleID: Int64, projectID: Int64, receivedAt: Date,
        _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        let seen = try await rows(
            connection,
            "SELECT 1 AS seen FROM reports WHERE project_id = \(projectID) AND report_uuid = \(occurrence.reportUUID)",
            logger: logger, { try $0["seen"].decode(Int32.self) })
        guard seen.isEmpty else { return }
        let occurred = occurrence.occurredAt.timeIntervalSince1970
        let (groupID, created) = try await group(
            for: occurrence.signature, kind: occurrence.kind, occurredAt: occurred, projectID: projectID, connection,
            logger)
        let state: String? = occurrence.needsSymbolication ? "pending" : nil
        guard
            let reportID = try await rows(
                connection,
                """
                INSERT INTO reports (project_id, bundle_id, group_id, report_uuid, kind, occurred_at, app_version, host,
                    reason, json, symbolication)
                VALUES (\(projectID), \(bundleID), \(groupID), \(occurrence.reportUUID), \(occurrence.kind),
                    \(occurred), \(occurrence.appVersion), \(occurrence.host), \(occurrence.reason), \(occurrence.json),
                    \(state))
                ON CONFLICT (project_id, report_uuid) DO NOTHING RETURNING id
                """, logger: logger, { try $0["id"].decode(Int64.self) }
            ).first
        else {
            // Another instance stored the same report between the check above and this insert. A
            // group this transaction created for it would stay at count 0: it goes too (nobody else
            // can see it before this transaction commits).
            if created {
                try await connection.query("DELETE FROM crash_groups WHERE id = \(groupID)", logger: logger)
            }
            return
        }
        for image in occurrence.images {
            try await connection.query(
                """
                INSERT INTO report_images (report_id, project_id, build_id, resolved)
                VALUES (\(reportID), \(projectID), \(image.buildID), \(image.resolved))
                """, logger: logger)
        }
        try await recordVersion(occurrence.appVersion, projectID: projectID, at: receivedAt, connection, logger)
        let (count, status) = try await count(
            reportID: reportID, occurredAt: occurred, versionKey: occurrence.versionKey, hostKey: occurrence.hostKey,
            in: groupID, connection, logger)
        let regressedAt = try await triage(
            occurrence, count: count, status: status, groupID: groupID, projectID: projectID, at: receivedAt,
            connection, logger)
        try await queueAlerts(
            groupID: groupID, createdGroup: created, regressedAt: regressedAt, projectID: projectID, at: receivedAt,
            connection, logger)
    }

    /// The id of the project's group with this signature, created (with count 0) when new; `created`
    /// when this transaction made it.
    static func group(
        for signature: CrashSignature.Result, kind: String, occurredAt occurred: Double, projectID: Int64,
        _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> (id: Int64, created: Bool) {
        let created = try await rows(
            connection,
            """
            INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                first_seen, last_seen)
            VALUES (\(projectID), \(signature.hash), \(Int64(CrashSignature.version)), \(signature.text),
                \(kind), \(signature.title), 0, \(occurred), \(occurred))
            ON CONFLICT (project_id, signature) DO NOTHING RETURNING id
            """, logger: logger, { try $0["id"].decode(Int64.self) })
        if let id = created.first { return (id, true) }
        guard
            let id = try await rows(
                connection,
                "SELECT id FROM crash_groups WHERE project_id = \(projectID) AND signature = \(signature.hash)",
                logger: logger, { try $0["id"].decode(Int64.self) }
            ).first
        else { throw StorageError.notFound("group \(signature.hash)") }
        return (id, false)
    }

    /// Counts one occurrence (the report `reportID`) in a group: count, first and last seen, latest
    /// report, version and host tallies. Returns the group's count and status afterwards.
    @discardableResult
    static func count(
        reportID: Int64, occurredAt occurred: Double, versionKey version: String, hostKey host: String,
        in groupID: Int64, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> (count: Int, status: GroupStatus) {
        guard
            let counted = try await rows(
                connection,
                """
                UPDATE crash_groups SET count = count + 1,
                    first_seen = LEAST(first_seen, \(occurred)),
                    latest_report_id = CASE WHEN \(occurred) >= last_seen OR latest_report_id IS NULL
                        THEN \(reportID) ELSE latest_report_id END,
                    last_seen = GREATEST(last_seen, \(occurred))
                WHERE id = \(groupID)
                RETURNING count, state, resolved_in, resolved_after, ignored_until_count, ignored_until,
                    state_changed_at
                """, logger: logger, { (Int(try $0["count"].decode(Int64.self)), try status($0)) }
            ).first
        else { throw StorageError.notFound("group \(groupID)") }
        let limit = Int64(CrashGroup.maxTrackedValues)
        let other = CrashGroup.otherValues
        // Past the limit of distinct values, a new one is counted under `other` (see CrashGroup).
        try await connection.query(
            """
            INSERT INTO group_versions (group_id, app_version, count)
            SELECT \(groupID), CASE WHEN EXISTS (
                    SELECT 1 FROM group_versions WHERE group_id = \(groupID) AND app_version = \(version))
                OR (SELECT count(*) FROM group_versions WHERE group_id = \(groupID)) < \(limit)
                THEN \(version) ELSE \(other) END, 1
            ON CONFLICT (group_id, app_version) DO UPDATE SET count = group_versions.count + 1
            """, logger: logger)
        try await connection.query(
            """
            INSERT INTO group_hosts (group_id, host, count)
            SELECT \(groupID), CASE WHEN EXISTS (
                    SELECT 1 FROM group_hosts WHERE group_id = \(groupID) AND host = \(host))
                OR (SELECT count(*) FROM group_hosts WHERE group_id = \(groupID)) < \(limit)
                THEN \(host) ELSE \(other) END, 1
            ON CONFLICT (group_id, host) DO UPDATE SET count = group_hosts.count + 1
            """, logger: logger)
        return counted
    }
}
