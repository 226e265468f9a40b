import BlackboxFormat
import Foundation
import Logging
import ServiceLifecycle

/// Brings groups made under an older signature version to the current one, in the background, one
/// group per transaction (`RegroupPlan`): at start, and every `interval` after it (for groups an
/// instance of an older collector made during a rolling upgrade). Ingest and symbolication already
/// use the current version, so the work only shrinks.
final class RegroupingService: Service, Sendable {
    private let store: any RegroupingStore
    private let loop: WorkerLoop
    private let logger = Logger(label: "collector.regrouping")
    /// Reports decoded per read: bounded memory, whatever the size of a group.
    static let reportsPerRead = 200

    init(store: any RegroupingStore, interval: Duration = .seconds(600)) {
        self.store = store
        self.loop = WorkerLoop(interval: interval)
    }

    func run() async throws {
        await loop.run { await regroupAll() }
    }

    /// Regroups until every group has the current version; returns how many groups it applied a plan
    /// to. A group that changes while it is planned is planned again in the next turn.
    @discardableResult
    func regroupAll() async -> Int {
        var applied = 0
        var after: Int64 = 0
        do {
            while !loop.isStopping {
                let groups = try await store.groupsWithOlderSignatures(after: after, limit: 100)
                guard let last = groups.last else { break }
                after = last
                for groupID in groups where !loop.isStopping {
                    if try await store.regroup(try await plan(groupID)) { applied += 1 }
                }
            }
        } catch {
            logger.error("regrouping stopped, to be tried again in the next turn: \(error)")
        }
        if applied > 0 {
            logger.info("\(applied) groups now have signature version \(CrashSignature.version)")
        }
        return applied
    }

    private func plan(_ groupID: Int64) async throws -> RegroupPlan {
        let reportIDs = try await store.reportIDs(inGroup: groupID)
        var reports: [RegroupedReport] = []
        var start = reportIDs.startIndex
        while start < reportIDs.endIndex {
            let ids = Array(reportIDs[start..<min(start + Self.reportsPerRead, reportIDs.endIndex)])
            start += ids.count
            let stored = try await store.reportJSON(ids: ids)
            for id in ids {
                // A report that no longer decodes stays where it is.
                guard let json = stored[id], let report = try? CrashReport.decode(json) else { continue }
                reports.append(RegroupedReport(id: id, report: report))
            }
        }
        return RegroupPlan(groupID: groupID, reportIDs: reportIDs, reports: reports)
    }
}
