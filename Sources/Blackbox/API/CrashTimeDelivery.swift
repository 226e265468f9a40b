/// Crash-time delivery: after the signal handler finished the raw report, it starts `blackbox
/// deliver-crash` (the CLI, shipped beside the app) and waits for it at most `deadline`; the helper
/// sends the raw report with its log lines to the collector and deletes it once stored. If the
/// helper fails or runs out of time, the report stays for the next launch as before. With a Sentry
/// DSN (`init(executable:sentryDSN:)`) the helper builds the report itself and sends it as a Sentry
/// event instead.
///
/// Everything the helper gets is fixed here, at start: the handler only adds the report's path.
/// The key reaches the helper in its environment (`BLACKBOX_KEY`), not on its command line, where
/// any user of the machine could read it.
public struct CrashTimeDelivery: Sendable {
    /// Absolute path of the `blackbox` executable.
    public var executable: String
    /// The collector's base URL.
    public var server: String
    /// The project's ingest key.
    public var key: String
    /// Deliver to this Sentry DSN instead of the collector (passed as `SENTRY_DSN`, with this
    /// process's `SENTRY_RELEASE` and `SENTRY_ENVIRONMENT`).
    public var sentryDSN: String?
    /// How long the crashed process waits for the helper before it dies anyway (1 to 120 s).
    /// Default 10 s.
    public var deadline: Duration = .seconds(10)
    /// More environment for the helper (for example `SSL_CERT_FILE`); `PATH`, `TMPDIR` and the
    /// collector's two variables are passed without asking.
    public var environment: [String: String] = [:]

    public init(executable: String, server: String, key: String) {
        self.executable = executable
        self.server = server
        self.key = key
    }

    /// Crash-time delivery to a Sentry-compatible server.
    public init(executable: String, sentryDSN: String) {
        self.init(executable: executable, server: "", key: "")
        self.sentryDSN = sentryDSN
    }
}
