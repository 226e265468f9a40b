/// The naming scheme of log files in `<directory>/logs/`:
/// ```
/// <base>.log                                               the active file (stable name for tail -F)
/// <base>.20261121T223939.123Z--20261121T231502.004Z.log    an archive: first and last line's time
/// <base>.20261121T223939.123Z--20261121T231502.004Z.log.gz the same, compressed
/// ```
/// A `-N` suffix after the end time keeps names unique. Blackbox touches only files that parse with
/// this scheme, so other files in the directory are safe.
struct ArchiveName: Equatable, Comparable {
    var baseName: String
    var startNanoseconds: UInt64
    var endNanoseconds: UInt64
    var sequence: Int = 0
    var compressed: Bool

    static func activeFileName(baseName: String) -> String { "\(baseName).log" }

    var fileName: String {
        let suffix = sequence > 0 ? "-\(sequence)" : ""
        return "\(baseName).\(Self.compact(startNanoseconds))--\(Self.compact(endNanoseconds))\(suffix).log"
            + (compressed ? ".gz" : "")
    }

    static func < (lhs: ArchiveName, rhs: ArchiveName) -> Bool {
        (lhs.endNanoseconds, lhs.startNanoseconds, lhs.sequence) < (
            rhs.endNanoseconds, rhs.startNanoseconds, rhs.sequence
        )
    }

    /// `20261121T223939.123Z`
    static func compact(_ nanoseconds: UInt64) -> String {
        let iso = TimestampFormatter.string(nanoseconds)  // 2026-11-21T22:39:39.123Z
        return iso.filter { $0 != "-" && $0 != ":" }
    }

    init(baseName: String, startNanoseconds: UInt64, endNanoseconds: UInt64, sequence: Int = 0, compressed: Bool) {
        self.baseName = baseName
        self.startNanoseconds = startNanoseconds
        self.endNanoseconds = endNanoseconds
        self.sequence = sequence
        self.compressed = compressed
    }

    /// Parses an archive file name of `baseName`, or returns nil for anything else.
    init?(fileName: String, baseName: String) {
        let prefix = baseName + "."
        guard fileName.hasPrefix(prefix) else { return nil }
        var rest = fileName.dropFirst(prefix.count)
        var compressed = false
        if rest.hasSuffix(".log.gz") {
            compressed = true
            rest = rest.dropLast(7)
        } else if rest.hasSuffix(".log") {
            rest = rest.dropLast(4)
        } else {
            return nil
        }
        let times = rest.split(separator: "--", maxSplits: 1, omittingEmptySubsequences: false)
        guard times.count == 2 else { return nil }
        var endPart = times[1]
        var sequence = 0
        if let dash = endPart.firstIndex(of: "-") {
            guard let n = Int(endPart[endPart.index(after: dash)...]), n > 0 else { return nil }
            sequence = n
            endPart = endPart[..<dash]
        }
        guard let start = Self.parseCompact(times[0]), let end = Self.parseCompact(endPart) else { return nil }
        self.init(
            baseName: baseName, startNanoseconds: start, endNanoseconds: end, sequence: sequence, compressed: compressed
        )
    }

    /// Parses `YYYYMMDDTHHMMSS.mmmZ`.
    static func parseCompact(_ text: Substring) -> UInt64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "."),
            bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for b in bytes[range] {
                guard b >= 48 && b <= 57 else { return nil }
                value = value * 10 + Int(b - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
            let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15),
            let millis = number(16..<19), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 61, year >= 1970
        else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second
        return UInt64(seconds) * 1_000_000_000 + UInt64(millis) * 1_000_000
    }

    /// Inverse of `TimestampFormatter.civilDate` (Howard Hinnant's days-from-civil).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
