/// What storing a bundle did: stored now, or found stored already.
public enum IndexOutcome: Sendable {
    case stored(BundleRecord)
    case duplicate(BundleRecord)

    public var record: BundleRecord {
        switch self {
        case .stored(let record), .duplicate(let record): record
        }
    }
}
