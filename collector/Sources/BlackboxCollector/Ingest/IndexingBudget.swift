/// The lines one upload may add to the log index, whatever its format: logs past the budget, in the
/// upload's order, are stored and downloadable but not indexed; each log counts at most the per-file
/// cap, which is all the indexer reads of a file. Applied by `IngestPlan`, which every format builds,
/// so a new format cannot skip it (Sentry `log` items once did: one 161 KB request queued 10 M rows,
/// security review 2026-11-27, finding 2).
struct IndexingBudget: Sendable {
    var maxLinesPerUpload: Int
    var maxLinesPerFile: Int

    init(maxLinesPerUpload: Int, maxLinesPerFile: Int) {
        self.maxLinesPerUpload = maxLinesPerUpload
        self.maxLinesPerFile = maxLinesPerFile
    }

    init(_ limits: IngestLimits) {
        self.init(maxLinesPerUpload: limits.maxIndexedLinesPerBundle, maxLinesPerFile: limits.maxIndexedLinesPerFile)
    }

    /// Marks the logs past the budget as not to be indexed (a log marked already stays so, and counts
    /// nothing).
    func apply(to files: inout [InspectedFile]) {
        var budget = maxLinesPerUpload
        for index in files.indices where files[index].kind == .log && !files[index].skipsIndexing {
            let lines = min(files[index].lineCount, maxLinesPerFile)
            if lines > budget {
                files[index].skipsIndexing = true
            } else {
                budget -= lines
            }
        }
    }
}
