public enum SessionKind: String, Sendable {
    /// A browser's session cookie.
    case session
    /// A one-time sign-in link, exchanged for a session on first use.
    case link
}
