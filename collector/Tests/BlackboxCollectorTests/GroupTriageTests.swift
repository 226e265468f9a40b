import Foundation
import Testing

@testable import BlackboxCollector

@Suite("Group triage: states, regressions, version order")
struct GroupTriageTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let semver = VersionOrder(firstSeen: { _ in nil })

    func facts(count: Int = 10, versions: [String] = []) -> GroupTriage.Facts {
        GroupTriage.Facts(count: count, versions: versions, order: semver)
    }

    @Test("semantic versions: numeric parts, missing parts are 0, pre-releases first, build metadata ignored")
    func semanticOrder() throws {
        func v(_ text: String) throws -> SemanticVersion { try #require(SemanticVersion(text)) }
        #expect(try v("1.10") > v("1.9"))
        #expect(try v("v1.2") == v("1.2.0"))
        #expect(try v("2.0.0-beta.2") < v("2.0.0"))
        #expect(try v("2.0.0-beta.2") < v("2.0.0-beta.10"))
        #expect(try v("2.0.0-alpha") < v("2.0.0-beta"))
        #expect(try v("1.2.3+build.7") == v("1.2.3"))
        #expect(SemanticVersion("nightly-2026-11-01") == nil)
        #expect(SemanticVersion("1..2") == nil && SemanticVersion("") == nil && SemanticVersion("1.2.3.4.5") == nil)
    }

    @Test("resolved in 1.2: an occurrence from 1.1 keeps it resolved, one from 1.2.1 regresses it; history says so")
    func resolvedInVersion() throws {
        let resolved = try #require(
            GroupTriage.apply(.resolved(in: "1.2"), to: .open, facts: facts(), actor: "admin:bbx_a", at: now))
        #expect(resolved.status.state == .resolved && resolved.status.resolvedIn == "1.2")
        #expect(
            resolved.change
                == .init(at: now, actor: "admin:bbx_a", from: .open, to: .resolved, detail: "resolved in 1.2"))

        let later = now.addingTimeInterval(60)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.1", countAfter: 11, order: semver, at: later)
                == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.1.9", countAfter: 12, order: semver, at: later)
                == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: nil, countAfter: 13, order: semver, at: later) == nil)
        let regressed = try #require(
            GroupTriage.afterOccurrence(resolved.status, version: "1.2.1", countAfter: 14, order: semver, at: later))
        #expect(regressed.status.state == .regressed && regressed.status.resolvedIn == nil)
        #expect(
            regressed.change
                == .init(at: later, actor: "collector", from: .resolved, to: .regressed, detail: "seen in 1.2.1"))
        // A regressed group stays regressed until someone acts on it.
        #expect(
            GroupTriage.afterOccurrence(regressed.status, version: "1.3", countAfter: 15, order: semver, at: later)
                == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.2", countAfter: 14, order: semver, at: later)
                != nil)
    }

    @Test("resolved outright: any occurrence regresses it")
    func resolvedOutright() throws {
        let resolved = try #require(
            GroupTriage.apply(.resolved(in: nil), to: .open, facts: facts(), actor: "a", at: now))
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "0.1", countAfter: 11, order: semver, at: now)?.status
                .state == .regressed)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: nil, countAfter: 11, order: semver, at: now)?.status
                .state == .regressed)
    }

    @Test("resolved in the next version: the newest version seen is the bound; only a later one regresses")
    func resolvedInNextVersion() throws {
        let resolved = try #require(
            GroupTriage.apply(
                .resolvedInNextVersion, to: .open, facts: facts(versions: ["1.0", "1.3", "1.2.9"]), actor: "a", at: now)
        )
        #expect(resolved.status.resolvedAfter == "1.3")
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.3", countAfter: 11, order: semver, at: now) == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.3.0", countAfter: 11, order: semver, at: now)
                == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "1.3.1", countAfter: 11, order: semver, at: now)?
                .status.state == .regressed)
    }

    @Test("versions that do not parse are ordered by when the collector first saw them")
    func firstSeenOrder() throws {
        let seen: [String: Date] = [
            "nightly-a": now.addingTimeInterval(-3600), "nightly-b": now.addingTimeInterval(-60),
            "nightly-c": now.addingTimeInterval(600),
        ]
        let order = VersionOrder(firstSeen: { seen[$0] })
        let facts = GroupTriage.Facts(count: 1, versions: [], order: order)
        let resolved = try #require(
            GroupTriage.apply(.resolved(in: "nightly-b"), to: .open, facts: facts, actor: "a", at: now))
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "nightly-a", countAfter: 2, order: order, at: now)
                == nil)
        #expect(
            GroupTriage.afterOccurrence(resolved.status, version: "nightly-c", countAfter: 2, order: order, at: now)
                != nil)
        // Resolved in a version not seen yet: versions seen before the resolution are older.
        let ahead = try #require(
            GroupTriage.apply(.resolved(in: "nightly-z"), to: .open, facts: facts, actor: "a", at: now))
        #expect(
            GroupTriage.afterOccurrence(ahead.status, version: "nightly-b", countAfter: 2, order: order, at: now) == nil
        )
        #expect(
            GroupTriage.afterOccurrence(ahead.status, version: "nightly-c", countAfter: 2, order: order, at: now) != nil
        )
    }

    @Test("ignored until 3 more occurrences: the third reopens it; ignored until a date: the first after it does")
    func ignored() throws {
        let ignored = try #require(
            GroupTriage.apply(
                .ignored(moreOccurrences: 3, until: nil), to: .open, facts: facts(count: 10), actor: "a", at: now))
        #expect(ignored.status.ignoredUntilCount == 13)
        #expect(ignored.change.detail == "ignored until 3 more occurrences")
        #expect(
            GroupTriage.afterOccurrence(ignored.status, version: "1", countAfter: 11, order: semver, at: now) == nil)
        #expect(
            GroupTriage.afterOccurrence(ignored.status, version: "1", countAfter: 12, order: semver, at: now) == nil)
        let reopened = try #require(
            GroupTriage.afterOccurrence(ignored.status, version: "1", countAfter: 13, order: semver, at: now))
        #expect(reopened.status.state == .open && reopened.change.from == .ignored)

        let until = now.addingTimeInterval(3600)
        let timed = try #require(
            GroupTriage.apply(
                .ignored(moreOccurrences: nil, until: until), to: .open, facts: facts(), actor: "a", at: now))
        #expect(GroupTriage.afterOccurrence(timed.status, version: nil, countAfter: 500, order: semver, at: now) == nil)
        #expect(
            GroupTriage.afterOccurrence(timed.status, version: nil, countAfter: 501, order: semver, at: until)?.status
                .state == .open)

        let forever = try #require(
            GroupTriage.apply(
                .ignored(moreOccurrences: nil, until: nil), to: .open, facts: facts(), actor: "a", at: now))
        #expect(
            GroupTriage.afterOccurrence(
                forever.status, version: "9", countAfter: 1_000_000, order: semver, at: .distantFuture) == nil)
    }

    @Test("asking for the state a group is already in changes nothing and records nothing")
    func noChange() throws {
        #expect(GroupTriage.apply(.open, to: .open, facts: facts(), actor: "a", at: now) == nil)
        let resolved = try #require(
            GroupTriage.apply(.resolved(in: "2"), to: .open, facts: facts(), actor: "a", at: now))
        #expect(
            GroupTriage.apply(
                .resolved(in: "2"), to: resolved.status, facts: facts(), actor: "a", at: now.addingTimeInterval(5))
                == nil)
        #expect(GroupTriage.apply(.resolved(in: "3"), to: resolved.status, facts: facts(), actor: "a", at: now) != nil)
    }
}
