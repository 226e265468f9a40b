#if Upload
    import Blackbox
    import Foundation
    import ZIPFoundation

    /// How much a spool may hold while its server is unreachable or refusing: live log shipping cuts the
    /// active log into the spool every pass, delivered or not, so without a cap the app's host kept a
    /// compressed copy of everything it logged, beyond the log retention the operator set (security
    /// review 2026-11-27, finding 9). The default is the log retention's (`RetentionPolicy`): the spool
    /// holds no more log, and none older, than `logs/` may.
    public struct SpoolCap: Sendable, Equatable {
        /// Bytes of waiting files; past it the oldest log-only files go first. Nil: no byte cap.
        public var maxBytes: Int64?
        /// Log-only files waiting longer are removed. Nil: no age cap.
        public var maxAge: Duration?
        /// Refused files kept for a person to look at (the newest); older ones are removed.
        public var maxRejected = 50

        public init(maxBytes: Int64?, maxAge: Duration?) {
            self.maxBytes = maxBytes
            self.maxAge = maxAge
        }

        public init(retention: RetentionPolicy) {
            self.init(maxBytes: retention.maxTotalBytes.map { Int64(clamping: $0) }, maxAge: retention.maxAge)
        }
    }

    extension Spool {
        /// What `enforce` removed.
        public struct Pruned: Sendable, Equatable {
            public var dropped: [Bundle] = []
            public var rejectedRemoved = 0
        }

        /// Removes waiting log-only files past `cap` (the oldest first; a file that holds a report is
        /// never removed: a crash outlives any amount of log), and refused files past its count.
        @discardableResult
        public func enforce(_ cap: SpoolCap, now: Date = Date()) -> Pruned {
            var pruned = Pruned()
            var waiting = pending()
            var total = waiting.reduce(Int64(0)) { $0 + $1.size }
            let oldestKept = cap.maxAge.map { now.addingTimeInterval(-Double($0.components.seconds)) }
            var index = 0
            while index < waiting.count {
                let bundle = waiting[index]
                let tooOld = oldestKept.map { modified(bundle.path) < $0 } ?? false
                let overBytes = cap.maxBytes.map { total > $0 } ?? false
                if (tooOld || overBytes) && !holdsReports(bundle) {
                    unlink(bundle.path)
                    total -= bundle.size
                    pruned.dropped.append(bundle)
                    waiting.remove(at: index)
                } else {
                    index += 1
                }
            }
            // Oldest first, by when each answer was recorded.
            let refused = rejected().map {
                ($0.path, modified(String($0.path.dropLast(fileExtension.count + 1)) + ".json"))
            }
            .sorted { ($0.1, $0.0) < ($1.1, $1.0) }
            for (path, _) in refused.dropLast(cap.maxRejected) {
                unlink(path)
                unlink(String(path.dropLast(fileExtension.count + 1)) + ".json")
                pruned.rejectedRemoved += 1
            }
            return pruned
        }

        /// Whether a waiting file carries a report (crash, hang, error…), not logs only: a bundle with
        /// a `reports/` entry, an envelope with an `event` item.
        func holdsReports(_ bundle: Bundle) -> Bool {
            if fileExtension == "zip" {
                // Unreadable: kept (it is not known to be log only).
                do {
                    let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
                    return archive.contains { $0.path.hasPrefix("reports/") }
                } catch {
                    return true
                }
            }
            // An envelope's item headers are single JSON lines; an event's says so.
            guard let data = FileManager.default.contents(atPath: bundle.path) else { return true }
            return data.split(separator: UInt8(ascii: "\n")).contains { line in
                line.first == UInt8(ascii: "{") && line.count < 4096
                    && String(decoding: line, as: UTF8.self).replacingOccurrences(of: " ", with: "")
                        .contains("\"type\":\"event\"")
            }
        }

        private func modified(_ path: String) -> Date {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date) ?? .distantPast
        }
    }
#endif
