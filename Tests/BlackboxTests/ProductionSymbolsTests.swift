import BlackboxFormat
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

/// Where users run: a release binary stripped of its debug info, started in a mount namespace where
/// the Swift toolchain's and LLVM's tools are gone (DESIGN.md's "production" recipe). The crash is
/// captured and processed there, by the stripped binary itself at its next launch.
@Suite("Production: a stripped release binary on a machine without the toolchain")
struct ProductionSymbolsTests {
    /// Empties the toolchain's and LLVM's bin directories and hides any other llvm-symbolizer, then
    /// runs the program. The Swift runtime libraries stay visible.
    static let hideToolchain = """
        set -e
        mount --make-rprivate /
        toolchain=$(dirname "$(readlink -f "$(command -v swift || echo /opt/swift/usr/bin/swift)")")
        for directory in "$toolchain" /usr/lib/llvm-*/bin; do
            if [ -d "$directory" ]; then mount -t tmpfs tmpfs "$directory"; fi
        done
        for tool in $(which -a llvm-symbolizer 2>/dev/null || true); do mount --bind /dev/null "$tool"; done
        exec "$@"
        """

    static func runInProduction(
        _ program: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> ChildResult {
        try runProgram(
            "/usr/bin/unshare", ["-m", "/bin/bash", "-c", hideToolchain, "production", program] + arguments,
            environment: environment)
    }

    /// A copy of the release crash child, stripped of its debug info the way production images are
    /// (the debug file is kept elsewhere, as a build would archive it).
    static func strippedReleaseChild(in directory: TemporaryDirectory) throws -> String {
        let release = try #require(Build.release.binDirectory, "BLACKBOX_TEST_RELEASE_BIN is not set")
        let app = "\(directory.path)/app"
        let symbols = "\(directory.path)/symbols"
        try FileManager.default.createDirectory(atPath: symbols, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(release)/blackbox-crash-child", toPath: app)
        for (tool, arguments) in [
            ("/usr/bin/objcopy", ["--only-keep-debug", app, "\(symbols)/app.debug"]),
            ("/usr/bin/strip", ["--strip-debug", app]),
            ("/usr/bin/objcopy", ["--add-gnu-debuglink=\(symbols)/app.debug", app]),
        ] {
            let result = try runProgram(tool, arguments)
            try #require(result.status == 0, "\(tool): \(result.stderr)")
        }
        let sections = try runProgram("/usr/bin/readelf", ["-S", "-W", app]).stdout
        try #require(!sections.contains(".debug_info") && sections.contains(".symtab"))
        return app
    }

    @Test("the namespace really hides the symbolizer and the toolchain")
    func namespaceHidesTheTools() throws {
        try #require(getuid() == 0, "the production namespace needs root (unshare -m); CI runs as root")
        let inside = try Self.runInProduction(
            "/bin/sh", ["-c", "for tool in llvm-symbolizer swift swiftc; do command -v $tool && exit 1; done; exit 0"])
        #expect(inside.status == 0, "still visible: \(inside.stdout)")
        #expect(Symbolicator.locate(configured: nil) != nil, "outside the namespace the symbolizer is found")
    }

    @Test(
        "index out of range: the processed report names every function the Swift backtracer names, from the symbol table"
    )
    func strippedBinaryNamesItsFunctions() throws {
        try #require(getuid() == 0, "the production namespace needs root (unshare -m); CI runs as root")
        let directory = TemporaryDirectory()
        let app = try Self.strippedReleaseChild(in: directory)
        let backtraces = "\(directory.path)/swift-backtrace"
        try FileManager.default.createDirectory(atPath: backtraces, withIntermediateDirectories: true)

        let crashed = try Self.runInProduction(
            app, [directory.path, "index", "main"],
            environment: [
                "SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no,format=json,output-to=\(backtraces)",
                "BLACKBOX_SWIFT_BACKTRACER": "always",
            ])
        #expect(crashed.signaled || crashed.status != 0)
        let next = try Self.runInProduction(app, [directory.path, "process-pending", "next"])
        #expect(next.status == 0, "\(next.stderr)")
        let path = try #require(next.stdout.split(separator: "\n").first.map(String.init), "nothing processed")
        let report = try CrashReport.decode(try Data(contentsOf: URL(fileURLWithPath: path)))

        #expect(report.notes.contains { $0.hasPrefix("llvm-symbolizer not found") }, "\(report.notes)")
        #expect(report.symbolicated)
        let appImage = report.images.firstIndex { $0.path == app }
        let firstInApp = try #require(report.frames.first { $0.imageIndex == appImage })
        #expect(firstInApp.symbols.first?.function.contains("triggerIndexOutOfRange") == true, "\(firstInApp)")
        #expect(firstInApp.symbolication == .symbolTable)
        #expect(firstInApp.symbols.allSatisfy { $0.file == nil }, "no debug info in a stripped binary")
        let named = report.frames.filter { $0.symbolication == .symbolTable }.count
        #expect(
            report.textRendering.contains("Symbols:          0 frames from debug info, \(named) from symbol tables"))

        // The free baseline: every frame the runtime's backtracer names, Blackbox names too.
        let baseline = try Self.namedFrames(inBacktracerLogIn: backtraces)
        #expect(baseline.contains { $0.1.contains("triggerIndexOutOfRange") }, "the backtracer named: \(baseline)")
        for (address, name) in baseline {
            let frame = report.frames.first { UInt64($0.address.dropFirst(2), radix: 16) == address }
            #expect(frame?.symbols.isEmpty == false, "Blackbox left \(name) at 0x\(String(address, radix: 16)) unnamed")
        }
    }

    /// The crashed thread's frames the backtracer named (address → name), from its JSON crash log.
    static func namedFrames(inBacktracerLogIn directory: String) throws -> [(UInt64, String)] {
        let file = try #require(directoryEntries(directory).first, "the Swift backtracer wrote no log")
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(file)"))
        let log = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let threads = try #require(log["threads"] as? [[String: Any]], "\(log.keys)")
        let crashed = try #require(threads.first { $0["crashed"] as? Bool == true })
        let frames = try #require(crashed["frames"] as? [[String: Any]])
        return frames.compactMap { frame in
            guard frame["inlined"] as? Bool != true, let symbol = frame["symbol"] as? String,
                let address = (frame["address"] as? String).flatMap({ UInt64($0.dropFirst(2), radix: 16) })
            else { return nil }
            return (address, symbol)
        }
    }
}
