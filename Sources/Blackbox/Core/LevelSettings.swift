/// Which level applies to which logger label: a default plus per-label rules matched by prefix (the
/// longest matching prefix wins), e.g. `net` applies to `net`, `net.http` and `network`.
public struct LevelSettings: Sendable, Equatable {
    public var defaultLevel: LogLevel
    public var labelLevels: [String: LogLevel]

    public init(defaultLevel: LogLevel = .info, labelLevels: [String: LogLevel] = [:]) {
        self.defaultLevel = defaultLevel
        self.labelLevels = labelLevels
    }

    public func level(for label: String) -> LogLevel {
        var best: (length: Int, level: LogLevel)? = nil
        for (prefix, level) in labelLevels where label.hasPrefix(prefix) {
            if prefix.count > (best?.length ?? -1) { best = (prefix.count, level) }
        }
        return best?.level ?? defaultLevel
    }

    /// Parses the `BLACKBOX_LOG_LEVEL` form: `info`, `net=debug`, `warning,net=debug,db.pool=trace`.
    /// A bare level sets the default; `label=level` sets a rule. Later entries win.
    public init(parsing text: String, base: LevelSettings = LevelSettings()) throws(BlackboxError) {
        self = base
        for item in text.split(separator: ",", omittingEmptySubsequences: true) {
            let part = String(item).trimmingCharacters(in: " \t")
            if part.isEmpty { continue }
            if let equals = part.firstIndex(of: "=") {
                let label = String(part[..<equals]).trimmingCharacters(in: " \t")
                let name = String(part[part.index(after: equals)...]).trimmingCharacters(in: " \t")
                guard !label.isEmpty, let level = LogLevel(name: name) else {
                    throw .invalidConfiguration("BLACKBOX_LOG_LEVEL: cannot read \"\(part)\"; expected label=level")
                }
                labelLevels[label] = level
            } else if let level = LogLevel(name: part) {
                defaultLevel = level
            } else {
                throw .invalidConfiguration(
                    "BLACKBOX_LOG_LEVEL: unknown level \"\(part)\"; use one of \(LogLevel.allCases.map(\.name).joined(separator: ", "))"
                )
            }
        }
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}
