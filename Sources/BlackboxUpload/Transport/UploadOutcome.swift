#if Upload
    import Foundation

    /// What the collector said about one upload, sorted by the retry contract (docs/bundle.md,
    /// docs/uploading.md): 2xx stored, 400/413/422 never resend, 401/403 the key is wrong (resending
    /// cannot help until someone fixes the configuration), anything else try again later.
    public enum UploadOutcome: Sendable, Equatable {
        /// Stored durably; `duplicate` when the collector already had it (the same Upload-Id or bytes).
        case stored(duplicate: Bool)
        /// Refused for good; the bundle is kept locally with the reason.
        case rejected(ServerAnswer)
        /// The key is missing, unknown or revoked.
        case unauthorized(ServerAnswer)
        /// A 5xx, a 429, a timeout or no connection: resend later with backoff.
        case retryLater(reason: String)
        /// Not sent now, and nothing wrong with it or the server: its kind of data is rate-limited
        /// (a Sentry server's `X-Sentry-Rate-Limits`). The pass goes on with the next file; this one
        /// waits in the spool.
        case deferred(reason: String)

        static func classify(status: Int, body: [UInt8]) -> UploadOutcome {
            let answer = ServerAnswer(status: status, body: body)
            switch status {
            case 200..<300: return .stored(duplicate: status == 200)
            case 400, 413, 422: return .rejected(answer)
            case 401, 403: return .unauthorized(answer)
            default: return .retryLater(reason: answer.description)
            }
        }
    }

    /// A non-2xx answer: the status and the machine-readable reason from the collector's JSON body
    /// (`{"error": "<code>", "message": "<sentence>"}`), or the start of whatever else it sent.
    public struct ServerAnswer: Sendable, Hashable, Codable, CustomStringConvertible {
        public var status: Int
        public var code: String?
        public var message: String

        public var description: String {
            "HTTP \(status)" + (code.map { " \($0)" } ?? "") + (message.isEmpty ? "" : ": \(message)")
        }

        public init(status: Int, code: String?, message: String) {
            self.status = status
            self.code = code
            self.message = message
        }

        init(status: Int, body: [UInt8]) {
            struct ErrorBody: Decodable {
                var error: String
                var message: String?
            }
            if let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body)) {
                self.init(status: status, code: decoded.error, message: decoded.message ?? "")
            } else {
                let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(
                    in: .whitespacesAndNewlines)
                self.init(status: status, code: nil, message: text)
            }
        }
    }

    /// Problems on this side of the wire.
    enum UploadFailure: Error, CustomStringConvertible {
        case file(String, String)

        var description: String {
            switch self {
            case .file(let path, let reason): "\(path): \(reason)"
            }
        }
    }
#endif
