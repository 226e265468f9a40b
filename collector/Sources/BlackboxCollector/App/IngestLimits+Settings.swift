/// Setting limits by name, for the command line (`--limit name=value`) and the environment
/// (`BLACKBOX_COLLECTOR_LIMITS=name=value,name=value`). Sizes take a `K`, `M` or `G` suffix
/// (powers of 1024), durations are seconds; every name is a property of `IngestLimits`.
extension IngestLimits {
    public struct SettingError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The names `set(_:)` accepts.
    public static let settingNames = [
        "maxConnections", "idleTimeout", "maxUploadDuration", "maxConcurrentUploads", "minFreeBytes",
        "maxBodyBytes", "maxEntries", "maxEntryBytes", "maxTotalBytes", "maxCompressionRatio", "maxReportBytes",
        "maxReportBytesPerBundle", "maxReportBytesInFlight", "maxFieldBytes", "maxIndexedLinesPerFile",
        "maxIndexedLinesPerBundle",
    ]

    /// Applies `name=value` settings, separated by commas.
    public mutating func set(_ settings: String) throws(SettingError) {
        for setting in settings.split(separator: ",") where !setting.trimmingCharacters(in: .whitespaces).isEmpty {
            let parts = setting.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let number = Self.number(parts[1]), number > 0 else {
                throw SettingError(description: "limit \"\(setting)\": expected name=positive number")
            }
            let count = Int(clamping: number)
            switch parts[0] {
            case "maxConnections": maxConnections = count
            case "idleTimeout": idleTimeout = .seconds(number)
            case "maxUploadDuration": maxUploadDuration = .seconds(number)
            case "maxConcurrentUploads": maxConcurrentUploads = count
            case "minFreeBytes": minFreeBytes = number
            case "maxBodyBytes": maxBodyBytes = count
            case "maxEntries": maxEntries = count
            case "maxEntryBytes": maxEntryBytes = count
            case "maxTotalBytes": maxTotalBytes = count
            case "maxCompressionRatio": maxCompressionRatio = count
            case "maxReportBytes": maxReportBytes = count
            case "maxReportBytesPerBundle": maxReportBytesPerBundle = count
            case "maxReportBytesInFlight": maxReportBytesInFlight = count
            case "maxFieldBytes": maxFieldBytes = count
            case "maxIndexedLinesPerFile": maxIndexedLinesPerFile = count
            case "maxIndexedLinesPerBundle": maxIndexedLinesPerBundle = count
            default:
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
