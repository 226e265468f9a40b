/// Which slice of a list to read: at most 500 items at a time.
public struct Page: Sendable, Equatable {
    public var limit: Int
    public var offset: Int
    public init(limit: Int = 50, offset: Int = 0) {
        self.limit = max(1, min(limit, 500))
        self.offset = max(0, offset)
    }
}
