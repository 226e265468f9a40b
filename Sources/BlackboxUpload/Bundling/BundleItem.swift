#if Upload
    import BlackboxFormat

    /// One file to put into a bundle.
    public struct BundleItem: Sendable, Equatable {
        /// Where the bytes come from.
        public var sourcePath: String
        /// The entry's path inside the zip: `reports/<name>.json` or `logs/<name>` (docs/bundle.md).
        public var entryPath: String
        public var kind: BundleManifest.Entry.Kind
        /// The bytes to take. Fixed when the item is chosen, so a file that keeps growing (the active
        /// log) is taken as it was at that moment, and the manifest's size and sha256 stay true.
        public var range: Range<Int64>

        public var size: Int64 { Int64(range.count) }

        public init(sourcePath: String, entryPath: String, kind: BundleManifest.Entry.Kind, range: Range<Int64>) {
            self.sourcePath = sourcePath
            self.entryPath = entryPath
            self.kind = kind
            self.range = range
        }
    }
#endif
