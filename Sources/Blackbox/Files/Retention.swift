/// Log aging: which archives to delete so that count, total size and age stay within the policy.
/// Pure logic over a listing, so that tests can feed it any file system state and any clock.
struct RetentionPlan {
    struct Archive: Equatable {
        var name: ArchiveName
        var size: UInt64
    }

    /// Archives to delete, oldest first. The active file is never deleted, but its size counts
    /// towards the quota.
    static func archivesToDelete(
        _ archives: [Archive], activeFileSize: UInt64, policy: RetentionPolicy, now: UInt64
    ) -> [Archive] {
        let sorted = archives.sorted { $0.name < $1.name }  // oldest first
        var doomed = Set<Int>()
        if let maxAge = policy.maxAge {
            let cutoff = now > maxAge.nanoseconds ? now - maxAge.nanoseconds : 0
            for (i, archive) in sorted.enumerated() where archive.name.endNanoseconds < cutoff { doomed.insert(i) }
        }
        if let maxArchives = policy.maxArchives {
            let excess = sorted.count - max(0, maxArchives)
            if excess > 0 { for i in 0..<excess { doomed.insert(i) } }
        }
        if let quota = policy.maxTotalBytes {
            var total = activeFileSize
            for (i, archive) in sorted.enumerated() where !doomed.contains(i) { total += archive.size }
            var i = 0
            while total > quota && i < sorted.count {
                if !doomed.contains(i) {
                    doomed.insert(i)
                    total -= sorted[i].size
                }
                i += 1
            }
        }
        return sorted.indices.filter { doomed.contains($0) }.map { sorted[$0] }
    }
}
