import Foundation

/// The time buckets of the trend charts (UTC hours and days, the last one being the current), and
/// turning counts into labelled bars.
enum Trends {
    struct Buckets {
        var since: Date
        var labels: [String]
    }

    /// The last `count` whole hours, the current one last; labelled `HH:00` (UTC, 24-hour clock).
    static func hours(_ count: Int, endingAt now: Date) -> Buckets {
        let current = (Int(now.timeIntervalSince1970) / 3600) * 3600
        let since = current - (count - 1) * 3600
        let labels = (0..<count).map { String(format: "%02d:00", ((since + $0 * 3600) % 86_400) / 3600) }
        return Buckets(since: Date(timeIntervalSince1970: TimeInterval(since)), labels: labels)
    }

    /// The last `count` days, today last; labelled like `24 Nov` (UTC).
    static func days(_ count: Int, endingAt now: Date) -> Buckets {
        let current = (Int(now.timeIntervalSince1970) / 86_400) * 86_400
        let since = Date(timeIntervalSince1970: TimeInterval(current - (count - 1) * 86_400))
        var style = Date.FormatStyle().day().month(.abbreviated)
        style.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        let labels = (0..<count).map { since.addingTimeInterval(TimeInterval($0 * 86_400)).formatted(style) }
        return Buckets(since: since, labels: labels)
    }

    static func bars(_ counts: [Int], labels: [String]) -> [SVGChart.Bar] {
        labels.enumerated().map { index, label in
            SVGChart.Bar(label: label, value: index < counts.count ? counts[index] : 0)
        }
    }

    /// The most frequent versions (at most `limit`), oldest first where they are semantic versions.
    static func versionBars(_ versions: [String: Int], limit: Int) -> [SVGChart.Bar] {
        let top = versions.sorted { $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value }.prefix(limit)
        return top.sorted { left, right in
            switch (SemanticVersion(left.key), SemanticVersion(right.key)) {
            case (let l?, let r?): l < r
            case (_?, nil): true
            case (nil, _?): false
            case (nil, nil): left.key < right.key
            }
        }.map { SVGChart.Bar(label: $0.key, value: $0.value) }
    }
}

/// One group's occurrences in the last 24 hours by hour and the last 30 days by day: what the group
/// page charts and `/api/v1/groups/:id/trend` answers.
struct GroupTrend {
    static let hourCount = 24
    static let dayCount = 30

    var hours: Trends.Buckets
    var byHour: [Int]
    var days: Trends.Buckets
    var byDay: [Int]

    init(groupID: Int64, store: any ProjectReader, in scope: ProjectScope, now: Date = Date()) async throws {
        hours = Trends.hours(Self.hourCount, endingAt: now)
        days = Trends.days(Self.dayCount, endingAt: now)
        byHour =
            try await store.occurrenceHistogram(
                groupIDs: [groupID], in: scope, since: hours.since, bucketSeconds: 3600, buckets: Self.hourCount
            )[groupID] ?? []
        byDay =
            try await store.occurrenceHistogram(
                groupIDs: [groupID], in: scope, since: days.since, bucketSeconds: 86_400, buckets: Self.dayCount
            )[groupID] ?? []
    }
}
