import Logging

/// Blackbox's swift-log backend.
///
/// The value is three words: an interned label pointer, the handler's metadata and an optional level
/// override, so swift-log keeps it inline in its existential (no box, no reference counting on copies).
/// The label's level lives in the label table and changes at run time without touching loggers that
/// already exist. A metadata provider is configured once, in `BlackboxConfiguration.metadataProvider`:
/// storing one per handler would make the value too large to stay inline.
public struct BlackboxLogHandler: LogHandler {
    private let label: LabelHandle
    public var metadata: Logger.Metadata = [:]
    private var levelOverride: LogLevel?

    public init(label: String, core: LoggingCore) {
        self.label = core.handle(for: label)
    }

    public var logLevel: Logger.Level {
        get { levelOverride?.loggerLevel ?? label.loggerLevel }
        set { levelOverride = LogLevel(newValue) }
    }

    /// The configuration's provider. Setting one per logger is not supported (see the type's note);
    /// a value set here is ignored and reported once on stderr.
    public var metadataProvider: Logger.MetadataProvider? {
        get { label.core._withUnsafeGuaranteedRef { $0.metadataProvider } }
        set {
            if newValue != nil {
                InternalDiagnostics.report(
                    "a per-logger metadata provider is ignored; set BlackboxConfiguration.metadataProvider instead",
                    key: "per-logger-provider")
            }
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = LogLevel(event.level)
        // `logLevel` cannot say "off" to swift-log, so the label's own level is checked here again.
        guard level >= (levelOverride ?? label.level) else { return }
        // Cores are immortal, so the core is used without retaining it: every thread logs through
        // the same core, and a retain/release pair on it per call (what `unowned(unsafe)` compiled
        // to) made all callers bounce its reference count's cache line between cores.
        label.core._withUnsafeGuaranteedRef { core in
            let provider = core.metadataProvider
            let encoded: EncodedMetadata
            if metadata.isEmpty && provider == nil && event.metadata?.isEmpty != false && event.error == nil {
                encoded = EncodedMetadata()
            } else {
                encoded = encodedMetadata(
                    explicit: event.metadata, error: event.error, provider: provider,
                    redact: core.redactSensitiveValues)
            }
            core.appendText(
                level: level, label: label, message: event.message.description, metadata: encoded, file: event.file,
                line: event.line)
        }
    }

    /// Handler metadata, then the provider's, then the call's (later sources win), sorted by key.
    private func encodedMetadata(
        explicit: Logger.Metadata?, error: (any Error)?, provider: Logger.MetadataProvider?, redact: Bool
    ) -> EncodedMetadata {
        let provided = provider?.get() ?? [:]
        let explicit = explicit ?? [:]
        guard !metadata.isEmpty || !provided.isEmpty || !explicit.isEmpty || error != nil else {
            return EncodedMetadata()
        }
        var merged = metadata
        merged.merge(provided) { _, new in new }
        merged.merge(explicit) { _, new in new }
        var entries = merged.map {
            (key: String($0.key.utf8.prefix(1024)) ?? "?", value: $0.value.rendered(redact: redact))
        }
        if let error { entries.append((key: "error", value: String(describing: error))) }
        entries.sort { $0.key < $1.key }
        return EncodedMetadata(entries: entries)
    }
}
