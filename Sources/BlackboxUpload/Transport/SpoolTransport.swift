#if Upload
    import Foundation

    /// Sends one spooled file to where it goes and sorts the answer by the retry contract: the
    /// collector's bundle API (`CollectorClient`) or a Sentry server's envelope endpoint
    /// (`SentryClient`). The spool, the consent, the retry and backoff stay one (`SpoolUploader`).
    public protocol SpoolTransport: Sendable {
        /// Never throws: every failure is an outcome.
        func upload(
            file path: String, uploadID: UUID, progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
        ) async -> UploadOutcome
    }

    extension CollectorClient: SpoolTransport {}
#endif
