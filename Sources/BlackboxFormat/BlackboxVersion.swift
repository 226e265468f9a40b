/// This package's version: the latest release in CHANGELOG.md (a test holds the two together), so a
/// tag, the changelog and what Blackbox tells servers (Sentry's `sdk.version`, `--version`) agree.
public enum BlackboxVersion {
    public static let current = "0.2.0"
}
