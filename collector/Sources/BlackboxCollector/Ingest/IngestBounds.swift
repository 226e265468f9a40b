/// The bounds `IngestPlan` holds every upload to, whatever its format (the limits a format applies
/// while reading its own bytes, such as a zip's inflation ratio, stay with the format).
struct IngestBounds: Sendable {
    var indexing: IndexingBudget
    var reports: ReportBounds
}

extension IngestBounds {
    init(_ limits: IngestLimits) {
        self.init(indexing: IndexingBudget(limits), reports: ReportBounds(limits))
    }
}
