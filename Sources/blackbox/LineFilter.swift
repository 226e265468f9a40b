#if Tools
    import Foundation

    /// The line filters of `blackbox logs`, for Blackbox's text lines
    /// (`<time> <TAG> <label>: …`) and JSON Lines (`"ts":"…"`, `"level":"…"`, `"label":"…"`). Lines in
    /// neither format pass.
    struct LineFilter {
        static let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        static let textTags = ["TRACE": 0, "DEBUG": 1, "INFO": 2, "NOTE": 3, "WARN": 4, "ERROR": 5, "CRIT": 6]

        var minimumLevel: Int?
        var labelPrefix: String?
        /// Bounds as the lines write times (`2026-11-22T10:00:00.000Z`), so comparing text compares time.
        var since: String?
        var until: String?

        var isEmpty: Bool { minimumLevel == nil && labelPrefix == nil && since == nil && until == nil }

        /// The lines of `text` that pass, each ending in a newline.
        func apply(to text: String) -> String {
            var out = ""
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) where keeps(line) {
                out += line + "\n"
            }
            return out
        }

        func keeps(_ line: Substring) -> Bool {
            guard !isEmpty else { return true }
            var lineLevel: Int?
            var lineLabel: Substring?
            var lineTime: Substring?
            if line.hasPrefix("{") {
                if let value = Self.jsonField("level", in: line) {
                    lineLevel = Self.levels.firstIndex(of: String(value))
                }
                lineLabel = Self.jsonField("label", in: line)
                lineTime = Self.jsonField("ts", in: line)
            } else {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
                if parts.count >= 3, let tag = Self.textTags[String(parts[1])] {
                    lineTime = parts[0]
                    lineLevel = tag
                    lineLabel = parts[2].hasSuffix(":") ? parts[2].dropLast() : parts[2]
                }
            }
            if let minimumLevel, let lineLevel, lineLevel < minimumLevel { return false }
            if let labelPrefix, let lineLabel, !lineLabel.hasPrefix(labelPrefix) { return false }
            if let since, let lineTime, lineTime < since { return false }
            if let until, let lineTime, lineTime >= until { return false }
            return true
        }

        static func jsonField(_ name: String, in line: Substring) -> Substring? {
            guard let start = line.range(of: "\"\(name)\":\"") else { return nil }
            let rest = line[start.upperBound...]
            return rest.firstIndex(of: "\"").map { rest[..<$0] }
        }

        /// `2026-11-22T10:00:00Z`, `2026-11-22T10:00:00.250Z`, `2026-11-22`, or an age (`90s`, `15m`,
        /// `2h`, `3d`) before `now`; as the lines write it, with milliseconds.
        static func timestamp(_ text: String, now: Date) -> String? {
            let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
            if let unit = text.last.flatMap({ units[$0] }), let amount = Double(text.dropLast()), amount >= 0 {
                return format(now.addingTimeInterval(-amount * unit))
            }
            let formatter = ISO8601DateFormatter()
            for options: ISO8601DateFormatter.Options in [
                [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate],
            ] {
                formatter.formatOptions = options
                if let date = formatter.date(from: text) { return format(date) }
            }
            return nil
        }

        static func format(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }
    }
#endif
