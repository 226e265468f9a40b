#if Upload
    /// Whether diagnostics may leave the machine. Asked before anything is bundled or sent.
    public enum UploadConsent: Sendable {
        case always
        /// Nothing is bundled or sent; reports and logs stay in the diagnostics directory.
        case never
        /// The callback decides, each time there is something to send (cache the person's answer in the
        /// app if it should be asked once).
        case ask(@Sendable (ConsentRequest) async -> Bool)

        func allows(_ request: ConsentRequest) async -> Bool {
            switch self {
            case .always: true
            case .never: false
            case .ask(let decide): await decide(request)
            }
        }
    }

    /// What would be sent, so a person can decide.
    public struct ConsentRequest: Sendable, Equatable {
        /// Crash and non-fatal reports not yet bundled.
        public var reports: Int
        /// Log files (archives and the active file's end) not yet bundled.
        public var logFiles: Int
        /// Bundles already waiting in the spool (consent was given when they were made).
        public var waitingBundles: Int
        /// Content bytes of the new reports and logs, before compression.
        public var bytes: Int64
    }
#endif
