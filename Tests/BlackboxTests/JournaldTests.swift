import BlackboxTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The journald output against the real `systemd-journald`, in a private mount namespace with its
/// own `/run/systemd` and journal folders (nothing reaches the machine's journal), read back with
/// `journalctl -o json`. Needs root (CI runs as root); elsewhere the suite is skipped.
@Suite("journald output, against systemd-journald", .serialized, .enabled(if: JournaldHarness.isAvailable))
struct JournaldTests {
    static let bigSize = 300_000

    @Test(
        "every record is one entry: message, priority, identifier, logger, call site, thread and metadata as fields; the file has every line"
    )
    func entriesInTheRealJournal() throws {
        let run = try JournaldHarness.run()
        #expect(run.status == 0, "\(run.log)")
        #expect(run.explicitOutput.contains("outputs: file, journald"), "\(run.explicitOutput)")

        let entries = run.entries(identifier: "bbx-explicit")
        func entry(_ message: String) -> [String: Any]? {
            entries.first { JournaldHarness.text($0["MESSAGE"]) == message }
        }
        let plain = try #require(entry("plain line"), "\(entries.count) entries: \(run.log)")
        #expect(JournaldHarness.text(plain["_TRANSPORT"]) == "journal", "sent through the native socket")
        #expect(JournaldHarness.text(plain["PRIORITY"]) == "6")
        #expect(JournaldHarness.text(plain["LOGGER"]) == "journal.test")
        let codeFile = JournaldHarness.text(plain["CODE_FILE"])
        #expect(codeFile == "blackbox_test_child/main.swift", "\(codeFile ?? "none")")
        #expect(Int(JournaldHarness.text(plain["CODE_LINE"]) ?? "") ?? 0 > 0)
        #expect(Int(JournaldHarness.text(plain["TID"]) ?? "") ?? 0 > 0)
        #expect(JournaldHarness.text(plain["REQUEST_ID"]) == "r-1")
        #expect(JournaldHarness.text(plain["TRACE_ID"]) == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(JournaldHarness.text(plain["SPAN_ID"]) == "00f067aa0ba902b7")
        #expect(JournaldHarness.text(plain["HTTP_METHOD"]) == "GET")
        #expect(JournaldHarness.text(plain["UNDERSCORED"]) == "u")
        #expect(JournaldHarness.text(plain["METADATA_MESSAGE"]) == "not the message")
        #expect(JournaldHarness.text(plain["LIVES"]) == "cat")
        #expect(JournaldHarness.text(plain["TOKEN"]) == "<redacted>")

        for (message, priority) in [
            ("trace line", "7"), ("debug line", "7"), ("notice line", "5"), ("error line", "3"),
            ("critical line", "2"), ("first line\nsecond line\n\tindented third", "4"), ("fast 42 true", "6"),
        ] {
            let found = entry(message)
            #expect(found != nil, "no entry \(message.debugDescription)")
            #expect(JournaldHarness.text(found?["PRIORITY"]) == priority, "\(message)")
        }
        #expect(JournaldHarness.text(entry("fast 42 true")?["LOGGER"]) == "journal.fast")
        for message in ["line in a function", "fast line in a function"] {
            let function = JournaldHarness.text(entry(message)?["CODE_FUNC"])
            #expect(function == "loggedInAFunction(_:)", "\(message): CODE_FUNC \(function ?? "none")")
            #expect(JournaldHarness.text(entry(message)?["CODE_FILE"]) == "blackbox_test_child/main.swift")
        }

        let big = String(repeating: "0123456789abcdef", count: Self.bigSize / 16)
        let bigEntry = entries.first { JournaldHarness.text($0["BIG"]) == "yes" }
        let bigMessage = JournaldHarness.text(bigEntry?["MESSAGE"])
        let whole = bigMessage == big
        #expect(whole, "the 300 KB entry arrived whole (a memfd): \(bigMessage?.count ?? -1) bytes")

        let fileLines = run.logFile("explicit")
        for line in ["plain line", "error line", "critical line", "fast 42 true"] {
            #expect(fileLines.contains { $0.contains(line) }, "\(line) in the log file")
        }
        // The records carry the function for the journal; the file's lines still name only the file.
        for line in fileLines where line.contains("line in a function") {
            #expect(
                line.contains("main.swift:") && !line.contains("loggedInAFunction") && !line.contains("\0"), "\(line)")
        }
        #expect(fileLines.filter { $0.contains("line in a function") }.count == 2)
    }

    @Test("under systemd (JOURNAL_STREAM names stderr), the default outputs are the file and the journal")
    func defaultUnderSystemd() throws {
        let run = try JournaldHarness.run()
        #expect(run.status == 0, "\(run.log)")
        let printed = run.entries(identifier: "bbx-cat").compactMap { JournaldHarness.text($0["MESSAGE"]) }
        #expect(printed.contains("outputs: file, journald"), "\(printed) \(run.log)")
        let line = run.entries(identifier: "child").first {
            JournaldHarness.text($0["MESSAGE"]) == "default outputs line"
        }
        #expect(JournaldHarness.text(line?["_TRANSPORT"]) == "journal", "native, not the stdout stream")
        #expect(JournaldHarness.text(line?["LOGGER"]) == "defaults")
    }

    @Test("no journal: one line on stderr, text on stderr instead; a journal gone away: one line, the file whole")
    func withoutAJournal() throws {
        let run = try JournaldHarness.run()
        #expect(run.status == 0, "\(run.log)")
        let absent = run.file("absent.err")
        #expect(absent.contains("no systemd journal socket at /run/systemd/journal/socket"), "\(absent)")
        #expect(absent.contains("INFO  journal.test: plain line"), "\(absent)")
        let gone = run.file("gone.err")
        #expect(gone.contains("cannot send to the systemd journal"), "\(gone)")
        #expect(gone.components(separatedBy: "cannot send to the systemd journal").count == 2, "said once: \(gone)")
        #expect(run.logFile("gone").contains { $0.contains("critical line") })
    }
}

/// Runs the scenes once per test process (they share one namespace and journald), in a script under
/// `unshare -m`.
enum JournaldHarness {
    static let journald = ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static var isAvailable: Bool {
        geteuid() == 0 && journald != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/journalctl")
    }

    struct Run: Sendable {
        var status: Int32
        /// Kept for the process's life: the tests read its files.
        var folder: TemporaryDirectory
        var directory: String { folder.path }
        var log: String
        var explicitOutput: String
        /// Every entry `journalctl -o json` printed, by line.
        var json: [String]

        func entries(identifier: String) -> [[String: Any]] {
            json.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.filter { JournaldHarness.text($0["SYSLOG_IDENTIFIER"]) == identifier }
        }

        func file(_ name: String) -> String {
            (try? String(contentsOfFile: "\(directory)/out/\(name)", encoding: .utf8)) ?? ""
        }

        func logFile(_ scene: String) -> [String] {
            ((try? String(contentsOfFile: "\(directory)/\(scene)/logs/child.log", encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }
    }

    /// journalctl's JSON gives a field as a string, or as an array of bytes when it is not printable
    /// text, or as an array of values when an entry has the field more than once.
    static func text(_ value: Any?) -> String? {
        if let string = value as? String { return string }
        if let bytes = value as? [Int] {
            return String(decoding: bytes.map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self)
        }
        return nil
    }

    private static let shared = Mutex<Result<Run, any Error>?>(nil)

    static func run() throws -> Run {
        try shared.withLock { cached in
            if let cached { return try cached.get() }
            let result = Result { try runScenes() }
            cached = result
            return try result.get()
        }
    }

    private static func runScenes() throws -> Run {
        let directory = TemporaryDirectory(prefix: "journald")
        let script = "\(directory.path)/scenes.sh"
        try scenes.write(toFile: script, atomically: true, encoding: .utf8)
        let result = try runProgram(
            "/usr/bin/unshare",
            [
                "-m", "/bin/bash", script, directory.path, helperExecutable("blackbox-test-child"), journald ?? "",
                "\(JournaldTests.bigSize)",
            ],
            within: .seconds(120))
        let json = ((try? String(contentsOfFile: "\(directory.path)/out/journal.json", encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
        return Run(
            status: result.status, folder: directory, log: result.stdout + result.stderr,
            explicitOutput: (try? String(contentsOfFile: "\(directory.path)/out/explicit.out", encoding: .utf8)) ?? "",
            json: json)
    }

    /// The scenes, inside the namespace: a journald of their own (the machine's journal folders hidden
    /// under empty tmpfs mounts), then the child with the journal asked for, under systemd-cat with
    /// JOURNAL_STREAM set as systemd sets it, before journald starts, and after it stopped.
    private static let scenes = #"""
        set -eu
        unset BLACKBOX_CONSOLE JOURNAL_STREAM
        dir=$1 child=$2 journald=$3 size=$4
        mkdir -p "$dir/out"
        mount --make-rprivate /
        mount -t tmpfs tmpfs /run/systemd
        mkdir -p /run/log && mount -t tmpfs tmpfs /run/log
        if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi

        BLACKBOX_CONSOLE=journald "$child" journald "$dir/absent" bbx-absent "$size" >"$dir/out/absent.out" 2>"$dir/out/absent.err"

        "$journald" >"$dir/out/journald.log" 2>&1 &
        journald_pid=$!
        for _ in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
        [ -S /run/systemd/journal/socket ] || { echo "journald did not start"; cat "$dir/out/journald.log"; exit 1; }

        BLACKBOX_CONSOLE=journald "$child" journald "$dir/explicit" bbx-explicit "$size" >"$dir/out/explicit.out" 2>"$dir/out/explicit.err"
        systemd-cat -t bbx-cat /bin/sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$0" default-outputs "$1"' "$child" "$dir/cat"

        journalctl --sync 2>/dev/null || sleep 1
        journalctl --all -o json --no-pager >"$dir/out/journal.json"
        kill "$journald_pid"; wait "$journald_pid" || true

        # The socket is still there, nobody reads it: every send is refused.
        BLACKBOX_CONSOLE=journald "$child" journald "$dir/gone" bbx-gone "$size" >"$dir/out/gone.out" 2>"$dir/out/gone.err"
        """#
}
