import BlackboxSystem
import Testing

@testable import Blackbox

/// The writer's rotation and failure decisions, without a disk.
@Suite struct WriterDecisionTests {
    @Test("size rotation: before the line that would pass the limit, never inside a line")
    func sizeRotation() {
        let rule = RotationRule(maxFileSize: 100, interval: nil)
        #expect(!rule.rotatesBefore(lineBytes: 40, fileSize: 60, batchedBytes: 0), "exactly at the limit fits")
        #expect(rule.rotatesBefore(lineBytes: 41, fileSize: 60, batchedBytes: 0))
        #expect(rule.rotatesBefore(lineBytes: 10, fileSize: 60, batchedBytes: 31), "what the batch holds counts")
        #expect(!rule.rotatesBefore(lineBytes: 500, fileSize: 0, batchedBytes: 0), "a long line fills an empty file")
        #expect(rule.rotatesBefore(lineBytes: 500, fileSize: 0, batchedBytes: 1))
    }

    @Test("time rotation: a non-empty file, once its interval has passed")
    func timeRotation() {
        let rule = RotationRule(maxFileSize: 1 << 20, interval: 1_000)
        #expect(rule.nanosecondsUntilDue(fileSize: 10, fileStart: 5_000, now: 5_400) == 600)
        #expect(!rule.isDue(fileSize: 10, fileStart: 5_000, now: 5_999))
        #expect(rule.isDue(fileSize: 10, fileStart: 5_000, now: 6_000))
        #expect(rule.isDue(fileSize: 10, fileStart: 5_000, now: 9_000))
        #expect(!rule.isDue(fileSize: 0, fileStart: 5_000, now: 9_000), "an empty file never rotates")
        #expect(
            RotationRule(maxFileSize: 1 << 20, interval: nil).nanosecondsUntilDue(
                fileSize: 10, fileStart: 0, now: .max) == nil)
        var policy = RotationPolicy()
        policy.interval = .milliseconds(1500)
        #expect(RotationRule(policy).interval == 1_500_000_000)
    }

    @Test("a failure episode: announced once, every lost line counted, over only when its notice is written")
    func failureEpisode() {
        var episode = FailureEpisode()
        #expect(!episode.isOngoing && episode.resumeNotice == nil)
        let starts = [
            episode.batchFailed(lines: 10, error: 28), episode.batchFailed(lines: 5, error: 28),
            episode.batchFailed(lines: 2, error: 13),
        ]
        #expect(starts == [true, false, false], "announced once, at the first failure")
        #expect(episode.isOngoing && episode.lostLines == 17)
        let notice = episode.resumeNotice ?? ""
        #expect(notice.hasPrefix("lost 17 log lines") && notice.contains(errnoDescription(13)), "\(notice)")
        #expect(episode.end() == 17)
        #expect(episode == FailureEpisode())
        let startsAgain = episode.batchFailed(lines: 1, error: 28)
        #expect(startsAgain, "a new failure after the end is a new episode")
    }
}
