import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Logs and reports hold personal data: the diagnostics directory is created privately and never
/// taken over through another user's directory or a planted symbolic link.
@Suite struct DirectorySafetyTests {
    static let otherUser: uid_t = 65534  // nobody
    static var isRoot: Bool { geteuid() == 0 }

    @Test("with HOME unset the default directory is in the user's home from the password database, not /tmp")
    func defaultDirectoryWithoutHome() throws {
        let result = try runProgram(
            "/usr/bin/env",
            ["-u", "HOME", "-u", "XDG_STATE_HOME", helperExecutable("blackbox-test-child"), "default-dir", "shop"])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let home = String(cString: getpwuid(geteuid()).pointee.pw_dir)
        #expect(printed == "\(home)/.local/state/shop")
        #expect(!printed.hasPrefix("/tmp/"))
    }

    @Test("a failed system call keeps its errno: a caller tells ENOTDIR and ENOENT apart without reading text")
    func errorsKeepErrno() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.write("plain-file", "x")
        var configuration = testConfiguration(directory)
        configuration.directory = "\(file)/diagnostics"
        let error = try #require(#expect(throws: BlackboxError.self) { try LoggingCore(configuration: configuration) })
        #expect(error.kind == .directoryUnavailable && error.path == "\(file)/diagnostics")
        #expect(error.underlying == SystemError("mkdir", path: "\(file)/diagnostics", errno: ENOTDIR), "\(error)")
        #expect("\(error)".contains("Not a directory"))

        let failure = #expect(throws: DurableFile.Failure.self) {
            try DurableFile.write([1], to: "\(directory.path)/missing/file")
        }
        #expect(
            failure?.underlying?.errno == ENOENT && failure?.underlying?.operation == "open",
            "\(String(describing: failure))")
        #expect(BlackboxError.alreadyStarted.kind == .alreadyStarted && BlackboxError.alreadyStarted.underlying == nil)
    }

    @Test("a diagnostics directory owned by another user is refused", .enabled(if: isRoot, "needs root to chown"))
    func foreignDirectoryIsRefused() throws {
        let directory = TemporaryDirectory()
        let foreign = "\(directory.path)/foreign"
        #expect(mkdir(foreign, 0o777) == 0 && chown(foreign, Self.otherUser, Self.otherUser) == 0)
        var configuration = testConfiguration(directory)
        configuration.directory = foreign
        let error = #expect(throws: BlackboxError.self) { try LoggingCore(configuration: configuration) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("owned by uid 65534"))
        #expect(!FileManager.default.fileExists(atPath: "\(foreign)/journal"), "nothing written into it")
    }

    @Test("a parent writable by every user is refused unless sticky (the /var/tmp fallback pre-made 0777)")
    func worldWritableParentIsRefused() throws {
        let directory = TemporaryDirectory()
        let shared = "\(directory.path)/blackbox-1000"
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o777) == 0)
        var configuration = testConfiguration(directory)
        configuration.directory = "\(shared)/app"
        let error = #expect(throws: BlackboxError.self) { try LoggingCore(configuration: configuration) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("writable by every user and not sticky"))
        #expect(!FileManager.default.fileExists(atPath: "\(shared)/app/journal"), "nothing written into it")
        // Sticky, as /tmp is: entries can be replaced only by their owners.
        #expect(chmod(shared, 0o1777) == 0)
        let core = try LoggingCore(configuration: configuration)
        core.shutdown()
    }

    @Test(
        "a symbolic link planted by another user is refused, not followed", .enabled(if: isRoot, "needs root to chown"))
    func plantedDirectoryLinkIsRefused() throws {
        let directory = TemporaryDirectory()
        let victim = "\(directory.path)/victim"
        #expect(mkdir(victim, 0o700) == 0)
        let planted = "\(directory.path)/state"
        #expect(symlink(victim, planted) == 0 && lchown(planted, Self.otherUser, Self.otherUser) == 0)
        var configuration = testConfiguration(directory)
        configuration.directory = planted
        let error = #expect(throws: BlackboxError.self) { try LoggingCore(configuration: configuration) }
        #expect("\(error.map { "\($0)" } ?? "")".contains("symbolic link owned by uid 65534"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: victim).isEmpty)
    }

    @Test("symbolic links planted at the journal or the log file are not followed")
    func plantedFileLinksAreRefused() throws {
        for planted in ["journal", "logs/test.log"] {
            let directory = TemporaryDirectory()
            let victim = "\(directory.path)/victim"
            try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
            #expect(mkdir(directory.logs, 0o700) == 0)
            #expect(symlink(victim, "\(directory.path)/\(planted)") == 0)
            #expect(throws: BlackboxError.self, "\(planted)") {
                try LoggingCore(configuration: testConfiguration(directory))
            }
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n", "\(planted)")
        }
    }

    @Test("the directory, the journal and the log file are private")
    func filesArePrivate() throws {
        let directory = TemporaryDirectory()
        var configuration = testConfiguration(directory)
        configuration.directory = "\(directory.path)/new/diagnostics"
        let core = try LoggingCore(configuration: configuration)
        core.shutdown()
        for (path, mode) in [
            (configuration.directory, 0o700), ("\(configuration.directory)/logs", 0o700),
            ("\(configuration.directory)/journal", 0o600), ("\(configuration.directory)/logs/test.log", 0o600),
        ] {
            var info = stat()
            #expect(stat(path, &info) == 0, "\(path)")
            #expect(Int(info.st_mode & 0o777) == mode, "\(path): \(String(info.st_mode & 0o777, radix: 8))")
        }
    }
}
