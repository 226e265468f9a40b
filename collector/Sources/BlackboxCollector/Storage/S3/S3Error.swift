/// A request to the bucket that did not succeed: what was asked, and S3's own answer (`NoSuchBucket`,
/// `SignatureDoesNotMatch`, `AccessDenied`, …) when the store gave one, or why there was none.
struct S3Error: Error, CustomStringConvertible, Equatable {
    /// `PUT ab/ab12….zip`, `HEAD bucket blackbox`.
    var operation: String
    /// The HTTP status; nil when no answer came (connection refused, timeout).
    var status: Int?
    /// S3's error code from the answer's XML, when it had one.
    var code: String?
    var message: String

    var description: String {
        let answer = status.map { "\($0)\(code.map { " \($0)" } ?? "")" } ?? "no answer"
        return "S3 \(operation): \(answer): \(message)"
    }

    /// A key that does not exist (404 but for a missing bucket).
    var isMissingObject: Bool { status == 404 && code != "NoSuchBucket" }

    /// Worth another try: the store was busy or unreachable, not refusing the request itself.
    var isTransient: Bool {
        guard let status else { return true }
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504
            || code == "SlowDown" || code == "RequestTimeout" || code == "InternalError"
    }
}
