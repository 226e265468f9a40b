import Foundation

/// `BundleIndex.apply`: one transaction per batch of plans, in the order `IngestPlan` documents.
/// Safe against other instances storing the same upload or report at the same time: the unique
/// constraints make a second insert wait for the first and then do nothing.
extension SQLDatabase {
    public func apply(_ plans: [IngestPlan]) async throws -> [IndexOutcome] {
        try await write { connection in try plans.map { try IngestTransaction.apply($0, in: connection) } }
    }
}

enum IngestTransaction {
    static func existing(_ connection: some SQLConnection, projectID: Int64, uploadID: String?, sha256: String)
        throws -> BundleRecord?
    {
        if let uploadID,
            let row = try connection.row(
                "SELECT * FROM bundles WHERE project_id = \(projectID) AND upload_id = \(uploadID)")
        {
            return try BundleRecord(row: row)
        }
        return try connection.row("SELECT * FROM bundles WHERE project_id = \(projectID) AND sha256 = \(sha256)")
            .map(BundleRecord.init)
    }

    /// Where statements are round trips (PostgreSQL), a bundle's files go in one statement of up to
    /// this many rows (few distinct statement texts to cache); elsewhere one statement per file.
    static let fileRowsPerStatement = 64

    static func apply(_ plan: IngestPlan, in connection: some SQLConnection) throws -> IndexOutcome {
        let new = plan.bundle
        let roundTrips = connection.dialect.statementsAreRoundTrips
        // Where statements are round trips, no lookup first: the unique constraints turn a duplicate's
        // insert into nothing, and only then is the stored bundle read.
        if !roundTrips,
            let existing = try existing(
                connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256)
        {
            return .duplicate(existing)
        }
        guard
            let stored = try connection.row(
                """
                INSERT INTO bundles (project_id, upload_id, sha256, size, blob, app_name, app_version, host,
                    has_manifest, received_at, file_count, report_count)
                VALUES (\(new.projectID), \(new.uploadID), \(new.sha256), \(new.size), \(new.blob), \(new.appName),
                    \(new.appVersion), \(new.host), \(new.hasManifest), \(new.receivedAt), \(new.fileCount),
                    \(new.reportCount))
                ON CONFLICT DO NOTHING RETURNING *
                """)
        else {
            // A duplicate: where there was no lookup first, this upload's retry or another upload of
            // the same bytes; or another instance storing it a moment ago (PostgreSQL).
            guard
                let existing = try existing(
                    connection, projectID: new.projectID, uploadID: new.uploadID, sha256: new.sha256)
            else { throw StorageError.notFound("bundle \(new.sha256) after a conflict") }
            return .duplicate(existing)
        }
        let record = try BundleRecord(row: stored)
        let day = new.receivedAt.receivedDay
        if roundTrips {
            for start in stride(from: 0, to: plan.files.count, by: fileRowsPerStatement) {
                let rows: [SQLStatement] = plan.files[start..<min(start + fileRowsPerStatement, plan.files.count)]
                    .map { file in
                        """
                        (\(record.id), \(file.path), \(file.kind.rawValue), \(file.size), \(file.sha256),
                            \(file.isIndexed), \(day)\(.cast(.date)))
                        """
                    }
                try connection.execute(
                    """
                    INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed, received_day)
                    VALUES \(rows.joined(separator: ", "))
                    """)
            }
        } else {
            for file in plan.files {
                try connection.execute(
                    """
                    INSERT INTO bundle_files (bundle_id, path, kind, size, sha256, indexed, received_day)
                    VALUES (\(record.id), \(file.path), \(file.kind.rawValue), \(file.size), \(file.sha256),
                        \(file.isIndexed), \(day)\(.cast(.date)))
                    """)
            }
        }
        for occurrence in plan.occurrences {
            try insert(
                occurrence, bundleID: record.id, projectID: new.projectID, receivedAt: new.receivedAt, connection)
        }
        try ReleaseStatements.addSessions(plan, connection)
        try AlertStatements.queueReleaseRegressions(plan, connection)
        try ReleaseStatements.addLosses(plan, connection)
        return .stored(record)
    }

    static func insert(
        _ occurrence: IngestPlan.OccurrenceRow, bundleID: Int64, projectID: Int64, receivedAt: Date,
        _ connection: some SQLConnection
    ) throws {
        guard
            try connection.row(
                "SELECT 1 AS seen FROM reports WHERE project_id = \(projectID) AND report_uuid = \(occurrence.reportUUID)"
            ) == nil
        else { return }
        let occurred = occurrence.occurredAt
        let (groupID, created) = try group(
            for: occurrence.signature, kind: occurrence.kind, occurredAt: occurred, projectID: projectID, connection)
        let state: String? = occurrence.needsSymbolication ? "pending" : nil
        guard
            let reportID = try connection.value(
                """
                INSERT INTO reports (project_id, bundle_id, group_id, report_uuid, kind, occurred_at, app_version, host,
                    reason, json, symbolication, trace_id, diagnosis)
                VALUES (\(projectID), \(bundleID), \(groupID), \(occurrence.reportUUID), \(occurrence.kind),
                    \(occurred), \(occurrence.appVersion), \(occurrence.host), \(occurrence.reason), \(occurrence.json),
                    \(state), \(occurrence.traceID), \(occurrence.diagnosis))
                ON CONFLICT (project_id, report_uuid) DO NOTHING RETURNING id
                """, as: Int64.self)
        else {
            // Another instance stored the same report between the check above and this insert. A
            // group this transaction created for it would stay at count 0: it goes too (nobody else
            // can see it before this transaction commits).
            if created { try connection.execute("DELETE FROM crash_groups WHERE id = \(groupID)") }
            return
        }
        for image in occurrence.images {
            try connection.execute(
                """
                INSERT INTO report_images (report_id, project_id, build_id, resolved)
                VALUES (\(reportID), \(projectID), \(image.buildID), \(image.resolved))
                """)
        }
        try TriageTransaction.recordVersion(occurrence.appVersion, projectID: projectID, at: receivedAt, connection)
        let counted = try count(
            reportID: reportID, occurredAt: occurred, versionKey: occurrence.versionKey, hostKey: occurrence.hostKey,
            in: groupID, connection)
        let regressedAt = try TriageTransaction.afterOccurrence(
            occurrence, count: counted.count, status: counted.status, groupID: groupID, projectID: projectID,
            at: receivedAt, connection)
        try AlertStatements.queue(
            groupID: groupID, createdGroup: created, regressedAt: regressedAt, projectID: projectID, at: receivedAt,
            connection)
    }

    /// The id of the project's group with this signature, created (with count 0) when new; `created`
    /// when this transaction made it.
    static func group(
        for signature: CrashSignature.Result, kind: String, occurredAt occurred: Date, projectID: Int64,
        _ connection: some SQLConnection
    ) throws -> (id: Int64, created: Bool) {
        if let id = try connection.value(
            """
            INSERT INTO crash_groups (project_id, signature, signature_version, signature_text, kind, title, count,
                first_seen, last_seen)
            VALUES (\(projectID), \(signature.hash), \(CrashSignature.version), \(signature.text),
                \(kind), \(signature.title), 0, \(occurred), \(occurred))
            ON CONFLICT (project_id, signature) DO NOTHING RETURNING id
            """, as: Int64.self)
        {
            return (id, true)
        }
        guard
            let id = try connection.value(
                "SELECT id FROM crash_groups WHERE project_id = \(projectID) AND signature = \(signature.hash)",
                as: Int64.self)
        else { throw StorageError.notFound("group \(signature.hash)") }
        return (id, false)
    }

    /// Counts one occurrence (the report `reportID`) in a group: count, first and last seen, latest
    /// report, version and host tallies. Returns the group's count and status afterwards, read
    /// under the row lock the update takes.
    @discardableResult
    static func count(
        reportID: Int64, occurredAt occurred: Date, versionKey version: String, hostKey host: String,
        in groupID: Int64, _ connection: some SQLConnection
    ) throws -> (count: Int, status: GroupStatus) {
        guard
            let counted = try connection.row(
                """
                UPDATE crash_groups SET count = count + 1,
                    first_seen = \(.least)(first_seen, \(occurred)),
                    latest_report_id = CASE WHEN \(occurred) >= last_seen OR latest_report_id IS NULL
                        THEN \(reportID) ELSE latest_report_id END,
                    last_seen = \(.greatest)(last_seen, \(occurred))
                WHERE id = \(groupID)
                RETURNING count, \(GroupStatus.columns)
                """)
        else { throw StorageError.notFound("group \(groupID)") }
        try tally(version, in: "group_versions", column: "app_version", of: groupID, connection)
        try tally(host, in: "group_hosts", column: "host", of: groupID, connection)
        return (try counted.decode("count"), try GroupStatus(row: counted))
    }

    /// Counts `value` in one of a group's tallies (`group_versions`, `group_hosts`): past the limit of
    /// distinct values, a new one is counted under `other` (see CrashGroup). (`WHERE true` lets
    /// SQLite tell the upsert's ON from a join's.)
    private static func tally(
        _ value: String, in table: StaticString, column: StaticString, of groupID: Int64,
        _ connection: some SQLConnection
    ) throws {
        let (table, column) = (table.description, column.description)
        try connection.execute(
            """
            INSERT INTO \(unsafeSQL: table) (group_id, \(unsafeSQL: column), count)
            SELECT \(groupID), CASE WHEN EXISTS (
                    SELECT 1 FROM \(unsafeSQL: table) WHERE group_id = \(groupID) AND \(unsafeSQL: column) = \(value))
                OR (SELECT count(*) FROM \(unsafeSQL: table) WHERE group_id = \(groupID)) < \(CrashGroup.maxTrackedValues)
                THEN \(value) ELSE \(CrashGroup.otherValues) END, 1
            WHERE true
            ON CONFLICT (group_id, \(unsafeSQL: column)) DO UPDATE SET count = \(unsafeSQL: table).count + 1
            """)
    }
}
