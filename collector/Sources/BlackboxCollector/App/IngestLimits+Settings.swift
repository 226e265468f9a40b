/// Setting limits by name, for the command line (`--limit name=value`) and the environment
/// (`BLACKBOX_COLLECTOR_LIMITS=name=value,name=value`). Sizes take a `K`, `M` or `G` suffix
/// (powers of 1024), durations are seconds; every name is a property of `IngestLimits`.
extension IngestLimits {
    public struct SettingError: Error, CustomStringConvertible {
        public let description: String
    }

    private static let counts: [String: WritableKeyPath<IngestLimits, Int> & Sendable] = [
        "maxConnections": \.maxConnections, "maxConcurrentUploads": \.maxConcurrentUploads,
        "maxBodyBytes": \.maxBodyBytes, "maxEntries": \.maxEntries, "maxEntryBytes": \.maxEntryBytes,
        "maxTotalBytes": \.maxTotalBytes, "maxCompressionRatio": \.maxCompressionRatio,
        "maxReportBytes": \.maxReportBytes, "maxReportBytesPerBundle": \.maxReportBytesPerBundle,
        "maxReportBytesInFlight": \.maxReportBytesInFlight, "maxFieldBytes": \.maxFieldBytes,
        "maxIndexedLinesPerFile": \.maxIndexedLinesPerFile, "maxIndexedLinesPerBundle": \.maxIndexedLinesPerBundle,
        "maxSymbolFileBytes": \.maxSymbolFileBytes, "maxConcurrentSymbolUploads": \.maxConcurrentSymbolUploads,
        "maxConcurrentUploadsPerProject": \.maxConcurrentUploadsPerProject,
        "maxConcurrentSymbolUploadsPerProject": \.maxConcurrentSymbolUploadsPerProject,
        "minSymbolUploadBytesPerSecond": \.minSymbolUploadBytesPerSecond,
        "maxSymbolFilesPerProject": \.maxSymbolFilesPerProject,
    ]
    private static let durations: [String: WritableKeyPath<IngestLimits, Duration> & Sendable] = [
        "idleTimeout": \.idleTimeout, "maxUploadDuration": \.maxUploadDuration,
        "maxSymbolUploadDuration": \.maxSymbolUploadDuration,
    ]
    private static let largeSizes: [String: WritableKeyPath<IngestLimits, Int64> & Sendable] = [
        "minFreeBytes": \.minFreeBytes, "maxBundleBytesPerProject": \.maxBundleBytesPerProject,
        "maxSymbolBytesPerProject": \.maxSymbolBytesPerProject,
    ]

    /// The names `set(_:)` accepts.
    public static var settingNames: [String] {
        (Array(counts.keys) + Array(durations.keys) + Array(largeSizes.keys)).sorted()
    }

    /// Applies `name=value` settings, separated by commas.
    public mutating func set(_ settings: String) throws(SettingError) {
        for setting in settings.split(separator: ",") where !setting.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = setting.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let number = Self.number(parts[1]), number > 0 else {
                throw SettingError(description: "limit \"\(setting)\": expected name=positive number")
            }
            if let property = Self.counts[parts[0]] {
                self[keyPath: property] = Int(clamping: number)
            } else if let property = Self.durations[parts[0]] {
                self[keyPath: property] = .seconds(number)
            } else if let property = Self.largeSizes[parts[0]] {
                self[keyPath: property] = number
            } else {
                throw SettingError(
                    description: "unknown limit \"\(parts[0])\"; known: \(Self.settingNames.joined(separator: ", "))")
            }
        }
    }

    private static func number(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        guard let last = text.last else { return nil }
        if let unit = units[Character(last.uppercased())] {
            return Int64(text.dropLast()).flatMap {
                $0.multipliedReportingOverflow(by: unit).overflow ? nil : $0 * unit
            }
        }
        return Int64(text)
    }
}
