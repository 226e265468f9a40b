extension CrashReport {
    /// One mapping of the crashed process (a line of `/proc/self/maps` at crash time).
    public struct MemoryMapping: Codable, Sendable, Equatable {
        /// Hex, like every address in a report.
        public var start: String
        /// One past the last byte (hex).
        public var end: String
        /// As `/proc/<pid>/maps` writes them: `r-xp`, `rw-p`, `---p` (a guard page)…
        public var permissions: String
        /// The mapped file, or the kernel's name (`[stack]`, `[heap]`); nil for anonymous memory.
        public var path: String?

        public init(start: String, end: String, permissions: String, path: String? = nil) {
            self.start = start
            self.end = end
            self.permissions = permissions
            self.path = path
        }

        /// `7f12a000-7f12b000 r--p 00000000 08:01 1234   /usr/lib/libfoo.so`; nil for anything else.
        public init?(mapsLine: some StringProtocol) {
            let fields = mapsLine.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 2 else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = UInt64(range[0], radix: 16), let end = UInt64(range[1], radix: 16),
                start < end, fields[1].count == 4
            else { return nil }
            let path = fields.count == 6 ? fields[5].trimmingPrefix(while: { $0 == " " }) : ""
            self.init(
                start: hex(start), end: hex(end), permissions: String(fields[1]),
                path: path.isEmpty ? nil : String(path))
        }

        var startAddress: UInt64 { address(fromHex: start) ?? 0 }
        var endAddress: UInt64 { address(fromHex: end) ?? 0 }
        public var isReadable: Bool { permissions.hasPrefix("r") }
        public var isWritable: Bool { permissions.dropFirst().hasPrefix("w") }
        public var isExecutable: Bool { permissions.dropFirst(2).hasPrefix("x") }
        /// No access at all: a guard page (a thread's stack has one below it) or reserved memory.
        public var isInaccessible: Bool { permissions.hasPrefix("---") }

        /// `r--p /usr/lib/libfoo.so`, `rw-p [heap]`, `---p anonymous memory`.
        public var shortDescription: String { "\(permissions) \(path ?? "anonymous memory")" }
    }

    /// The mappings around one address at crash time: the one that held it (nil: the address was in
    /// none) and its neighbours below and above.
    public struct MemoryNeighbourhood: Codable, Sendable, Equatable {
        public var holding: MemoryMapping?
        public var below: MemoryMapping?
        public var above: MemoryMapping?

        public init(holding: MemoryMapping? = nil, below: MemoryMapping? = nil, above: MemoryMapping? = nil) {
            self.holding = holding
            self.below = below
            self.above = above
        }

        /// `in rw-p [heap] 0x55d0…-0x55d1…`, or `in no mapping, after r-xp /usr/bin/app (ends 0x…),
        /// before rw-p [heap] (starts 0x…)`.
        public var summary: String {
            if let holding {
                return "in \(holding.shortDescription) \(holding.start)-\(holding.end)"
            }
            let sides = [
                below.map { "after \($0.shortDescription) (ends \($0.end))" },
                above.map { "before \($0.shortDescription) (starts \($0.start))" },
            ]
            return (["in no mapping"] + sides.compactMap { $0 }).joined(separator: ", ")
        }
    }
}
