import BlackboxFormat
import Foundation

/// `ProjectReader` (but for log search, which each database does its own way): every query filters
/// by the scope's project.
extension SQLDatabase {
    public func groups(in scope: ProjectScope, query: GroupQuery, page: Page) async throws -> [CrashGroup] {
        let statement = GroupQueryStatement.select(query, projectID: scope.projectID, page: page)
        return try await read { connection in try GroupReads.groups(connection.rows(statement), connection) }
    }

    public func group(id: Int64, in scope: ProjectScope) async throws -> CrashGroup? {
        try await read { connection in
            try GroupReads.groups(
                connection.rows("SELECT * FROM crash_groups WHERE id = \(id) AND project_id = \(scope.projectID)"),
                connection
            ).first
        }
    }

    public func occurrenceHistogram(
        groupIDs: [Int64], in scope: ProjectScope, since: Date, bucketSeconds: Int, buckets: Int
    ) async throws -> [Int64: [Int]] {
        guard !groupIDs.isEmpty, buckets > 0, bucketSeconds > 0 else { return [:] }
        let start = since.timeIntervalSince1970
        let end = start + Double(bucketSeconds * buckets)
        let rows = try await rows(
            """
            SELECT group_id, CAST(\(.floor)((occurred_at - \(start)) / \(Double(bucketSeconds))) AS BIGINT) AS bucket,
                count(*) AS n
            FROM reports
            WHERE project_id = \(scope.projectID) AND group_id IN (\(list: groupIDs))
                AND occurred_at >= \(start) AND occurred_at < \(end)
            GROUP BY group_id, bucket
            """)
        return histogram(
            groupIDs: groupIDs, buckets: buckets,
            rows: try rows.map {
                (group: try $0.decode("group_id"), bucket: try $0.decode("bucket"), count: try $0.decode("n"))
            })
    }

    public func occurrences(groupID: Int64, in scope: ProjectScope, page: Page) async throws -> [Occurrence] {
        try await rows(
            """
            SELECT id, report_uuid, bundle_id, occurred_at, app_version, host, reason FROM reports
            WHERE group_id = \(groupID) AND project_id = \(scope.projectID) ORDER BY occurred_at DESC, id DESC
            LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map { row in
            Occurrence(
                reportID: try row.decode("id"), reportUUID: try row.decode("report_uuid"),
                bundleID: try row.decode("bundle_id"), occurredAt: try row.decode("occurred_at"),
                appVersion: try row.decode("app_version"), host: try row.decode("host"),
                reason: try row.decode("reason"))
        }
    }

    public func report(id: Int64, in scope: ProjectScope) async throws -> StoredReport? {
        guard
            let row = try await rows(
                """
                SELECT id, bundle_id, group_id, json, symbolication, symbolication_attempts, symbolication_failure
                FROM reports WHERE id = \(id) AND project_id = \(scope.projectID)
                """
            ).first
        else { return nil }
        return StoredReport(
            id: try row.decode("id"), bundleID: try row.decode("bundle_id"), groupID: try row.decode("group_id"),
            report: try CrashReport.decode(try row.decode("json", as: Data.self)),
            symbolication: ReportSymbolication(
                column: try row.decode("symbolication"), attempts: try row.decode("symbolication_attempts"),
                failure: try row.decode("symbolication_failure")))
    }

    public func reports(traceID: String, in scope: ProjectScope, page: Page) async throws -> [TracedReport] {
        try await rows(
            """
            SELECT id, group_id, kind, occurred_at, app_version, host, reason FROM reports
            WHERE project_id = \(scope.projectID) AND trace_id = \(traceID) ORDER BY occurred_at, id
            LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map { row in
            TracedReport(
                reportID: try row.decode("id"), groupID: try row.decode("group_id"), kind: try row.decode("kind"),
                occurredAt: try row.decode("occurred_at"), appVersion: try row.decode("app_version"),
                host: try row.decode("host"), reason: try row.decode("reason"))
        }
    }

    public func bundles(in scope: ProjectScope, page: Page) async throws -> [BundleRecord] {
        try await rows(
            """
            SELECT * FROM bundles WHERE project_id = \(scope.projectID) ORDER BY received_at DESC, id DESC
            LIMIT \(page.limit) OFFSET \(page.offset)
            """
        ).map(BundleRecord.init)
    }

    public func bundle(id: Int64, in scope: ProjectScope) async throws -> BundleRecord? {
        try await rows("SELECT * FROM bundles WHERE id = \(id) AND project_id = \(scope.projectID)").first
            .map(BundleRecord.init)
    }

    public func files(bundleID: Int64, in scope: ProjectScope) async throws -> [BundleFile] {
        try await rows(
            """
            SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
            WHERE f.bundle_id = \(bundleID) AND b.project_id = \(scope.projectID) ORDER BY f.path
            """
        ).map(BundleFile.init)
    }

    public func file(id: Int64, in scope: ProjectScope) async throws -> BundleFile? {
        try await rows(
            """
            SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
            WHERE f.id = \(id) AND b.project_id = \(scope.projectID)
            """
        ).first.map(BundleFile.init)
    }
}

enum GroupReads {
    /// Groups with their version and host tallies: three queries for a whole page.
    static func groups(_ rows: [SQLRow], _ connection: some SQLConnection) throws -> [CrashGroup] {
        guard !rows.isEmpty else { return [] }
        let ids = try rows.map { try $0.decode("id", as: Int64.self) }
        var versions: [Int64: [String: Int]] = [:]
        for row in try connection.rows(
            "SELECT group_id, app_version, count FROM group_versions WHERE group_id IN (\(list: ids)) AND count > 0")
        {
            versions[try row.decode("group_id"), default: [:]][try row.decode("app_version")] = try row.decode("count")
        }
        var hosts: [Int64: [String: Int]] = [:]
        for row in try connection.rows(
            "SELECT group_id, host, count FROM group_hosts WHERE group_id IN (\(list: ids)) AND count > 0")
        {
            hosts[try row.decode("group_id"), default: [:]][try row.decode("host")] = try row.decode("count")
        }
        return try rows.map { row in
            let id: Int64 = try row.decode("id")
            var group = CrashGroup(
                id: id, projectID: try row.decode("project_id"), signature: try row.decode("signature"),
                signatureVersion: try row.decode("signature_version"), kind: try row.decode("kind"),
                title: try row.decode("title"), count: try row.decode("count"), firstSeen: try row.decode("first_seen"),
                lastSeen: try row.decode("last_seen"), latestReportID: try row.decode("latest_report_id"),
                versions: versions[id] ?? [:], hosts: hosts[id] ?? [:])
            group.status = try GroupStatus(row: row)
            return group
        }
    }
}

/// `LogIndex.indexedBundle(id:)` (finding and storing the lines is each database's own), and the
/// readiness check.
extension SQLDatabase {
    public func ping() async throws {
        _ = try await rows("SELECT 1 AS one")
    }

    public func indexedBundle(id: Int64) async throws -> BundleRecord? {
        try await rows("SELECT * FROM bundles WHERE id = \(id)").first.map(BundleRecord.init)
    }
}
