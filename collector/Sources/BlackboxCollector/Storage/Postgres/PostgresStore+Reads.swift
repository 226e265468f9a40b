import BlackboxFormat
import Foundation
import PostgresNIO

/// `ProjectReader`: every query filters by the scope's project.
extension PostgresStore {
    static func group(_ row: PostgresRandomAccessRow) throws -> CrashGroup {
        var group = CrashGroup(
            id: try row["id"].decode(Int64.self), projectID: try row["project_id"].decode(Int64.self),
            signature: try row["signature"].decode(String.self),
            signatureVersion: Int(try row["signature_version"].decode(Int64.self)),
            kind: try row["kind"].decode(String.self), title: try row["title"].decode(String.self),
            count: Int(try row["count"].decode(Int64.self)),
            firstSeen: Date(timeIntervalSince1970: try row["first_seen"].decode(Double.self)),
            lastSeen: Date(timeIntervalSince1970: try row["last_seen"].decode(Double.self)),
            latestReportID: try row["latest_report_id"].decode(Int64?.self), versions: [:], hosts: [:])
        group.status = try status(row)
        return group
    }

    /// Fills in versions and hosts.
    func completed(_ groups: [CrashGroup]) async throws -> [CrashGroup] {
        guard !groups.isEmpty else { return [] }
        let ids = groups.map(\.id)
        let versions = try await read(
            "SELECT group_id, app_version, count FROM group_versions WHERE group_id = ANY(\(ids)) AND count > 0"
        ) {
            (
                try $0["group_id"].decode(Int64.self), try $0["app_version"].decode(String.self),
                try $0["count"].decode(Int64.self)
            )
        }
        let hosts = try await read(
            "SELECT group_id, host, count FROM group_hosts WHERE group_id = ANY(\(ids)) AND count > 0"
        ) {
            (
                try $0["group_id"].decode(Int64.self), try $0["host"].decode(String.self),
                try $0["count"].decode(Int64.self)
            )
        }
        return groups.map { group in
            var group = group
            for (id, version, count) in versions where id == group.id { group.versions[version] = Int(count) }
            for (id, host, count) in hosts where id == group.id { group.hosts[host] = Int(count) }
            return group
        }
    }

    public func groups(in scope: ProjectScope, query: GroupQuery, page: Page) async throws -> [CrashGroup] {
        let statement = GroupQuerySQL(query, projectID: scope.projectID, page: page)
        var bindings = PostgresBindings()
        for argument in statement.arguments {
            switch argument {
            case .integer(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            }
        }
        return try await completed(read(PostgresQuery(unsafeSQL: statement.numberedSQL, binds: bindings), Self.group))
    }

    public func occurrenceHistogram(
        groupIDs: [Int64], in scope: ProjectScope, since: Date, bucketSeconds: Int, buckets: Int
    ) async throws -> [Int64: [Int]] {
        guard !groupIDs.isEmpty, buckets > 0, bucketSeconds > 0 else { return [:] }
        let start = since.timeIntervalSince1970
        let end = start + Double(bucketSeconds * buckets)
        let size = Double(bucketSeconds)
        let rows = try await read(
            """
            SELECT group_id, floor((occurred_at - \(start)) / \(size))::bigint AS bucket, count(*) AS n FROM reports
            WHERE project_id = \(scope.projectID) AND group_id = ANY(\(groupIDs))
                AND occurred_at >= \(start) AND occurred_at < \(end)
            GROUP BY group_id, bucket
            """
        ) {
            (
                group: try $0["group_id"].decode(Int64.self), bucket: Int(try $0["bucket"].decode(Int64.self)),
                count: Int(try $0["n"].decode(Int64.self))
            )
        }
        return histogram(groupIDs: groupIDs, buckets: buckets, rows: rows)
    }

    public func group(id: Int64, in scope: ProjectScope) async throws -> CrashGroup? {
        try await completed(
            read("SELECT * FROM crash_groups WHERE id = \(id) AND project_id = \(scope.projectID)", Self.group)
        ).first
    }

    public func occurrences(groupID: Int64, in scope: ProjectScope, page: Page) async throws -> [Occurrence] {
        try await read(
            """
            SELECT id, report_uuid, bundle_id, occurred_at, app_version, host, reason FROM reports
            WHERE group_id = \(groupID) AND project_id = \(scope.projectID) ORDER BY occurred_at DESC, id DESC
            LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """
        ) {
            Occurrence(
                reportID: try $0["id"].decode(Int64.self), reportUUID: try $0["report_uuid"].decode(String.self),
                bundleID: try $0["bundle_id"].decode(Int64.self),
                occurredAt: Date(timeIntervalSince1970: try $0["occurred_at"].decode(Double.self)),
                appVersion: try $0["app_version"].decode(String?.self), host: try $0["host"].decode(String?.self),
                reason: try $0["reason"].decode(String?.self))
        }
    }

    public func report(id: Int64, in scope: ProjectScope) async throws -> StoredReport? {
        let found = try await read(
            """
            SELECT id, bundle_id, group_id, json, symbolication, symbolication_attempts, symbolication_failure
            FROM reports WHERE id = \(id) AND project_id = \(scope.projectID)
            """
        ) {
            (
                try $0["id"].decode(Int64.self), try $0["bundle_id"].decode(Int64.self),
                try $0["group_id"].decode(Int64.self), try $0["json"].decode(Data.self),
                ReportSymbolication(
                    column: try $0["symbolication"].decode(String?.self),
                    attempts: Int(try $0["symbolication_attempts"].decode(Int64.self)),
                    failure: try $0["symbolication_failure"].decode(String?.self))
            )
        }
        guard let (id, bundleID, groupID, json, symbolication) = found.first else { return nil }
        return StoredReport(
            id: id, bundleID: bundleID, groupID: groupID, report: try CrashReport.decode(json),
            symbolication: symbolication)
    }

    public func bundles(in scope: ProjectScope, page: Page) async throws -> [BundleRecord] {
        try await read(
            """
            SELECT * FROM bundles WHERE project_id = \(scope.projectID) ORDER BY received_at DESC, id DESC
            LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """, Self.bundle)
    }

    public func bundle(id: Int64, in scope: ProjectScope) async throws -> BundleRecord? {
        try await read("SELECT * FROM bundles WHERE id = \(id) AND project_id = \(scope.projectID)", Self.bundle).first
    }

    public func files(bundleID: Int64, in scope: ProjectScope) async throws -> [BundleFile] {
        try await read(
            """
            SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
            WHERE f.bundle_id = \(bundleID) AND b.project_id = \(scope.projectID) ORDER BY f.path
            """, Self.file)
    }

    public func file(id: Int64, in scope: ProjectScope) async throws -> BundleFile? {
        try await read(
            """
            SELECT f.* FROM bundle_files f JOIN bundles b ON b.id = f.bundle_id
            WHERE f.id = \(id) AND b.project_id = \(scope.projectID)
            """, Self.file
        ).first
    }

    /// Every word must appear: `plainto_tsquery` ANDs the words and takes operators literally.
    public func searchLogs(in scope: ProjectScope, query: String, page: Page) async throws -> [LogHit] {
        guard query.contains(where: { !$0.isWhitespace }) else { return [] }
        return try await read(
            """
            SELECT l.file_id, l.line_number, l.text, f.bundle_id, f.path
            FROM log_lines l JOIN bundle_files f ON f.id = l.file_id JOIN bundles b ON b.id = f.bundle_id
            WHERE l.tsv @@ plainto_tsquery('simple', \(query)) AND b.project_id = \(scope.projectID)
            ORDER BY l.file_id DESC, l.line_number DESC LIMIT \(Int64(page.limit)) OFFSET \(Int64(page.offset))
            """
        ) {
            LogHit(
                fileID: try $0["file_id"].decode(Int64.self), bundleID: try $0["bundle_id"].decode(Int64.self),
                path: try $0["path"].decode(String.self), lineNumber: Int(try $0["line_number"].decode(Int32.self)),
                text: try $0["text"].decode(String.self))
        }
    }
}
