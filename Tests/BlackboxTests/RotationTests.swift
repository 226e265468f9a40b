import BlackboxTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import Blackbox

@Suite struct RotationTests {
    let directory = TemporaryDirectory()

    func logger(_ core: LoggingCore) -> Logger {
        Logger(label: "rot") { BlackboxLogHandler(label: $0, core: core) }
    }

    @Test func archiveNamesRoundTrip() throws {
        let name = ArchiveName(
            baseName: "my.app", startNanoseconds: 1_795_300_779_123_000_000, endNanoseconds: 1_795_304_000_004_000_000,
            sequence: 2, compressed: true)
        #expect(name.fileName == "my.app.20261121T223939.123Z--20261121T233320.004Z-2.log.gz")
        #expect(ArchiveName(fileName: name.fileName, baseName: "my.app") == name)
        for other in [
            "my.app.log", "my.app.20261121T223939.123Z.log", "my.app.x--y.log", "notes.txt",
            "my.app.20261121T223939.123Z--20261121T233320.004Z.log.gz.tmp",
            "my.app.20261121T223939.123Z--20261121T233320.004Z-0.log",
            "other.20261121T223939.123Z--20261121T233320.004Z.log",
        ] {
            #expect(ArchiveName(fileName: other, baseName: "my.app") == nil, "\(other)")
        }
    }

    @Test func rotatesBySizeWithoutLosingOrSplittingLines() throws {
        var configuration = testConfiguration(directory)
        configuration.rotation.maxFileSize = 4096
        configuration.retention.maxArchives = nil
        configuration.retention.maxTotalBytes = nil
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        for i in 0..<300 { logger(core).info("size rotation line \(i) padding padding padding padding") }
        core.flush()
        core.waitForArchiveMaintenance()
        let archives = directoryEntries(directory.logs).compactMap { ArchiveName(fileName: $0, baseName: "test") }
        #expect(archives.count >= 6)
        for archive in archives {
            let size = fileSize("\(directory.logs)/\(archive.fileName)")
            #expect(size <= 4096 && size > 3000, "\(archive.fileName) has \(size) bytes")
        }
        let lines = try allLogLines(directory)
        #expect(lines.count == 300)
        for (i, line) in lines.enumerated() { #expect(line.contains("size rotation line \(i) padding")) }
    }

    /// The paths the on-archive hook was called with.
    private final class ArchivedPaths: Sendable {
        private let paths = Mutex<[String]>([])
        var all: [String] { paths.withLock { $0 } }
        func append(_ path: String) { paths.withLock { $0.append(path) } }
    }

    /// Hourly rotation on a clock the test moves, compressed archives, and the hook's paths.
    private static func hourlyCompressedArchives(_ directory: TemporaryDirectory) -> (
        clock: ManualClock, archived: ArchivedPaths, configuration: BlackboxConfiguration
    ) {
        let clock = ManualClock()
        let archived = ArchivedPaths()
        var configuration = testConfiguration(directory)
        configuration.clock = clock.read
        configuration.rotation.interval = .seconds(3600)
        configuration.retention.compressArchives = true
        configuration.onArchive = { path in archived.append(path) }
        return (clock, archived, configuration)
    }

    @Test func rotatesByTimeAndCompressesAndCallsTheHook() throws {
        let (clock, archived, configuration) = Self.hourlyCompressedArchives(directory)
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        logger(core).info("in the first hour")
        core.flush()
        clock.advance(by: .seconds(3601))
        logger(core).info("in the second hour")
        core.flush()
        core.waitForArchiveMaintenance()
        let paths = archived.all
        #expect(paths.count == 1)
        let path = try #require(paths.first)
        #expect(path.hasSuffix(".log.gz"))
        let name = try #require(ArchiveName(fileName: String(path.split(separator: "/").last!), baseName: "test"))
        #expect(name.compressed)
        #expect(name.endNanoseconds - name.startNanoseconds >= 3600 * 1_000_000_000)
        let archivedText = String(decoding: try Gzip.decompress(path), as: UTF8.self)
        #expect(archivedText.contains("in the first hour") && !archivedText.contains("second hour"))
        #expect(logLines(directory).count == 1)
        #expect(logLines(directory).first?.contains("in the second hour") == true)
        // No uncompressed copy is left behind.
        #expect(!FileManager.default.fileExists(atPath: String(path.dropLast(3))))
    }

    @Test("archives are compressed at the configured zlib level")
    func compressionLevel() throws {
        /// The archive of one hour of the same 4,000 varied lines, compressed at `level`.
        func archive(level: Int) throws -> (size: Int, messages: [Substring]) {
            let directory = TemporaryDirectory()
            let (clock, archived, hourly) = Self.hourlyCompressedArchives(directory)
            var configuration = hourly
            configuration.retention.compressionLevel = level
            let core = try LoggingCore(configuration: configuration)
            defer { core.shutdown() }
            var random = SplitMix64(seed: 7)
            for i in 0..<4_000 {
                logger(core).info("request \(i) took \(random.next() % 10_000) us for user \(random.next() % 500)")
            }
            core.flush()
            clock.advance(by: .seconds(3601))
            logger(core).info("next hour")
            core.flush()
            core.waitForArchiveMaintenance()
            let path = try #require(archived.all.first)
            var status = stat()
            #expect(stat(path, &status) == 0)
            let text = String(decoding: try Gzip.decompress(path), as: UTF8.self)
            // Lines without their timestamps, which differ from run to run.
            return (Int(status.st_size), text.split(separator: "\n").map { $0.drop { $0 != " " } })
        }
        let fastest = try archive(level: 1)
        let smallest = try archive(level: 9)
        let clamped = try archive(level: 42)
        #expect(fastest.messages.count == 4_000 && fastest.messages.last?.contains("request 3999 took") == true)
        #expect(fastest.messages == smallest.messages && smallest.messages == clamped.messages)
        #expect(fastest.size > smallest.size * 11 / 10, "level 1: \(fastest.size) bytes, level 9: \(smallest.size)")
        // 42 is clamped to 9 (zlib refuses 42): as small as level 9's, give or take the timestamps.
        #expect(abs(clamped.size - smallest.size) < (fastest.size - smallest.size) / 4, "level 42: \(clamped.size)")
    }

    @Test func retentionPlanHonoursCountQuotaAndAge() {
        let hour: UInt64 = 3600 * 1_000_000_000
        let now: UInt64 = 100 * hour
        func archive(_ endHour: UInt64, _ size: UInt64) -> RetentionPlan.Archive {
            RetentionPlan.Archive(
                name: ArchiveName(
                    baseName: "a", startNanoseconds: (endHour - 1) * hour, endNanoseconds: endHour * hour,
                    compressed: true),
                size: size)
        }
        let archives = [archive(99, 10), archive(50, 10), archive(98, 10), archive(97, 10), archive(10, 10)]
        var policy = RetentionPolicy()
        policy.maxArchives = 2
        policy.maxTotalBytes = nil
        policy.maxAge = nil
        #expect(
            RetentionPlan.archivesToDelete(archives, activeFileSize: 0, policy: policy, now: now).map(
                \.name.endNanoseconds)
                == [10 * hour, 50 * hour, 97 * hour])
        policy.maxArchives = nil
        policy.maxTotalBytes = 35  // the active file's 10 bytes count too
        #expect(RetentionPlan.archivesToDelete(archives, activeFileSize: 10, policy: policy, now: now).count == 3)
        policy.maxTotalBytes = nil
        policy.maxAge = .seconds(24 * 3600)
        #expect(
            RetentionPlan.archivesToDelete(archives, activeFileSize: 0, policy: policy, now: now).map(
                \.name.endNanoseconds)
                == [10 * hour, 50 * hour])
    }

    @Test func agingAtStartTouchesOnlyOurFilesAndFinishesInterruptedWork() throws {
        try FileManager.default.createDirectory(atPath: directory.logs, withIntermediateDirectories: true)
        let clock = ManualClock()
        let hour: UInt64 = 3600 * 1_000_000_000
        func name(_ hoursAgo: UInt64, compressed: Bool = true) -> String {
            ArchiveName(
                baseName: "test", startNanoseconds: clock.read() - (hoursAgo + 1) * hour,
                endNanoseconds: clock.read() - hoursAgo * hour, compressed: compressed
            ).fileName
        }
        let ours = [name(1), name(2), name(3), name(400)]
        let strangers = [
            "notes.txt", "other.20200101T000000.000Z--20200101T010000.000Z.log", "test.log.bak",
        ]
        for file in ours + strangers {
            _ = FileManager.default.createFile(atPath: "\(directory.logs)/\(file)", contents: Data("x\n".utf8))
        }
        _ = FileManager.default.createFile(atPath: "\(directory.logs)/\(name(5)).deleting", contents: Data())
        _ = FileManager.default.createFile(atPath: "\(directory.logs)/\(name(6)).tmp", contents: Data())

        var configuration = testConfiguration(directory)
        configuration.clock = clock.read
        configuration.retention.maxArchives = 2
        configuration.retention.maxAge = .seconds(24 * 3600)
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        core.waitForArchiveMaintenance()
        let remaining = Set(directoryEntries(directory.logs))
        #expect(remaining.contains(name(1)) && remaining.contains(name(2)))
        #expect(!remaining.contains(name(3)) && !remaining.contains(name(400)))
        for stranger in strangers { #expect(remaining.contains(stranger), "\(stranger) must be left alone") }
        #expect(!remaining.contains("\(name(5)).deleting"))
        #expect(!remaining.contains("\(name(6)).tmp"))
    }

    @Test func agingAlsoRunsOnItsTimer() throws {
        let clock = ManualClock()
        var configuration = testConfiguration(directory)
        configuration.clock = clock.read
        configuration.retention.maxAge = .seconds(3600)
        configuration.retention.checkInterval = .milliseconds(100)
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        core.waitForArchiveMaintenance()
        // An archive that is fine now and too old once the clock moves on: only the timer can notice.
        let name = ArchiveName(
            baseName: "test", startNanoseconds: clock.read() - 2_000_000_000,
            endNanoseconds: clock.read() - 1_000_000_000,
            compressed: true)
        let path = "\(directory.logs)/\(name.fileName)"
        _ = FileManager.default.createFile(atPath: path, contents: Data("x\n".utf8))
        usleep(300_000)
        #expect(FileManager.default.fileExists(atPath: path))
        clock.advance(by: .seconds(7200))
        let deadline = Date().addingTimeInterval(5)
        while FileManager.default.fileExists(atPath: path) && Date() < deadline { usleep(20_000) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func leftoverUncompressedArchiveIsCompressedAtStart() throws {
        try FileManager.default.createDirectory(atPath: directory.logs, withIntermediateDirectories: true)
        let clock = ManualClock()
        let plain = ArchiveName(
            baseName: "test", startNanoseconds: clock.read() - 2_000_000_000,
            endNanoseconds: clock.read() - 1_000_000_000,
            compressed: false)
        _ = FileManager.default.createFile(
            atPath: "\(directory.logs)/\(plain.fileName)", contents: Data("old line\n".utf8))
        var configuration = testConfiguration(directory)
        configuration.clock = clock.read
        configuration.retention.compressArchives = true
        let core = try LoggingCore(configuration: configuration)
        defer { core.shutdown() }
        core.waitForArchiveMaintenance()
        let gz = "\(directory.logs)/\(plain.fileName).gz"
        #expect(String(decoding: try Gzip.decompress(gz), as: UTF8.self) == "old line\n")
        #expect(!FileManager.default.fileExists(atPath: "\(directory.logs)/\(plain.fileName)"))
    }
}
