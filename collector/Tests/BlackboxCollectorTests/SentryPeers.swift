import BlackboxTestSupport
import Foundation
import Testing

/// The pinned PyPI peers (`make python-peers`, scripts/python-peers.txt): `BLACKBOX_PYTHON`, else the
/// repository's `.venv`. Required, never skipped: `make test` makes the venv before these tests.
enum PythonPeers {
    static var python: String {
        if let python = ProcessInfo.processInfo.environment["BLACKBOX_PYTHON"] { return python }
        var directory = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent(".venv/bin/python").path
    }

    /// Runs `script` with the venv's Python (off the cooperative pool), from a file, as an app runs:
    /// the SDK then reads its frames' source lines (`context_line`), which it cannot for `-c`.
    static func run(_ script: String, _ arguments: [String]) async throws -> Tool.Result {
        try #require(
            FileManager.default.isExecutableFile(atPath: python),
            "no Python venv with the pinned peers at \(python): run `make python-peers`")
        let directory = TemporaryDirectory(prefix: "python-peer")
        defer { directory.remove() }
        let file = "\(directory.path)/client.py"
        try Data(script.utf8).write(to: URL(fileURLWithPath: file))
        return try await Tool.Running(python, [file] + arguments, environment: [:]).wait()
    }

    /// A sentry-python client. Arguments: DSN, `br` or `gzip` (with `gzip` the brotli module cannot
    /// be imported, so the SDK compresses with gzip), a tag that marks this run's events and logs.
    /// It sends an exception raised two calls deep, a message, a session that ends crashed, and a
    /// structured log line, then prints which compression its transport used.
    static let sentryClient = #"""
        import os, sys
        dsn, compression, tag = sys.argv[1], sys.argv[2], sys.argv[3]
        # Run from its project's directory, as an app is: the SDK counts the frames under it in_app.
        os.chdir(os.path.dirname(os.path.abspath(__file__)))
        if compression == "gzip":
            sys.modules["brotli"] = None  # as if the module were not installed
        import sentry_sdk, sentry_sdk.transport
        sentry_sdk.init(dsn=dsn, release="shop@1.4.2+77", environment="test", enable_logs=True,
                        server_name="web-7", auto_session_tracking=False)
        print("brotli" if sentry_sdk.transport.brotli is not None else "no-brotli")
        sentry_sdk.set_tag("run", tag)
        sentry_sdk.set_user({"id": "user-42", "email": "someone@example.com"})

        def parse(order):
            return int(order["count"])

        def handle(order):
            return parse(order)

        try:
            handle({"count": "seven"})
        except Exception as error:
            sentry_sdk.capture_exception(error)
        sentry_sdk.capture_message("cache warm-up took too long in " + tag)
        scope = sentry_sdk.get_isolation_scope()
        scope.start_session()
        scope._session.update(status="crashed")
        scope.end_session()
        sentry_sdk.logger.info("payment accepted for order {order}", order=tag)
        sentry_sdk.flush(15)
        """#
}
