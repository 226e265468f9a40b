/// What one retention pass deleted.
public struct RetentionOutcome: Sendable, Equatable {
    public var deletedBundles: Int
    public var unreferencedBlobs: [String]
}
