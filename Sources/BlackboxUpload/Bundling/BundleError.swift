#if Upload
    /// Why a bundle could not be made: the file involved and what went wrong, in one line.
    public struct BundleError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path): \(reason)" }

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }
#endif
