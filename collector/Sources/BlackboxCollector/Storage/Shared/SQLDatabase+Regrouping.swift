import Foundation

/// `RegroupingStore`. Instances may plan the same group at once: the group's row is locked and its
/// reports compared with the plan's, so exactly one applies it.
extension SQLDatabase {
    public func groupsWithOlderSignatures(after groupID: Int64, limit: Int) async throws -> [Int64] {
        try await rows(
            """
            SELECT id FROM crash_groups WHERE signature_version < \(CrashSignature.version) AND id > \(groupID)
            ORDER BY id LIMIT \(limit)
            """
        ).map { try $0.decode("id") }
    }

    public func reportIDs(inGroup groupID: Int64) async throws -> [Int64] {
        try await rows("SELECT id FROM reports WHERE group_id = \(groupID) ORDER BY id").map { try $0.decode("id") }
    }

    public func reportJSON(ids: [Int64]) async throws -> [Int64: Data] {
        guard !ids.isEmpty else { return [:] }
        var result: [Int64: Data] = [:]
        for row in try await rows("SELECT id, json FROM reports WHERE id IN (\(list: ids))") {
            result[try row.decode("id")] = try row.decode("json")
        }
        return result
    }

    public func regroup(_ plan: RegroupPlan) async throws -> Bool {
        try await write { connection in try RegroupTransaction.apply(plan, connection) }
    }
}

enum RegroupTransaction {
    /// The prefix a group's old signature takes when its occurrences merged into another group's:
    /// it stays unique in the project and can never equal a current signature (a sha256 in hex).
    static let retiredPrefix = "retired:"

    static func apply(_ plan: RegroupPlan, _ connection: some SQLConnection) throws -> Bool {
        let groupID = plan.groupID
        guard
            let group = try connection.row(
                """
                SELECT project_id, signature, signature_version FROM crash_groups WHERE id = \(groupID)
                \(.forUpdate)
                """)
        else { return false }
        let version: Int = try group.decode("signature_version")
        guard version < CrashSignature.version else { return false }
        let current: [Int64] = try connection.rows("SELECT id FROM reports WHERE group_id = \(groupID) ORDER BY id") {
            try $0.decode("id")
        }
        guard current == plan.reportIDs else { return false }
        let projectID: Int64 = try group.decode("project_id")
        guard let target = plan.target else {
            try connection.execute(
                "UPDATE crash_groups SET signature_version = \(CrashSignature.version) WHERE id = \(groupID)")
            return true
        }
        let existing = try connection.value(
            "SELECT id FROM crash_groups WHERE project_id = \(projectID) AND signature = \(target.hash)", as: Int64.self
        )
        if existing == nil {
            try connection.execute(
                """
                UPDATE crash_groups SET signature = \(target.hash), signature_version = \(CrashSignature.version),
                    signature_text = \(target.text), title = \(target.title)
                WHERE id = \(groupID)
                """)
        } else {
            let oldSignature: String = try group.decode("signature")
            try connection.execute(
                """
                UPDATE crash_groups SET signature = \(retiredPrefix + oldSignature),
                    signature_version = \(CrashSignature.version)
                WHERE id = \(groupID)
                """)
        }
        for report in plan.reports where report.signature.hash != target.hash {
            try GroupMoves.move(report, from: groupID, projectID: projectID, connection)
        }
        if let existing { try GroupMoves.merge(groupID, into: existing, connection) }
        return true
    }
}
