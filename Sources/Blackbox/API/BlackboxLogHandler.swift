import Logging

/// Blackbox's swift-log backend.
///
/// The value holds an interned label pointer and an optional level override; the label's level lives in
/// the label table and changes at run time without touching loggers that already exist. swift-log 1.16
/// reads `logLevel` through a `_read` accessor, so the handler is not copied on a disabled call.
/// Handler metadata (`logger[metadataKey:]`) is stored inline as swift-log requires of value-typed
/// handlers; it is empty, and costs nothing, unless the app sets it.
public struct BlackboxLogHandler: LogHandler {
    private let label: LabelHandle
    private var levelOverride: LogLevel?
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, core: LoggingCore, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = core.handle(for: label)
        self.metadataProvider = metadataProvider
    }

    public var logLevel: Logger.Level {
        get { (levelOverride ?? label.level).loggerLevel }
        set { levelOverride = LogLevel(newValue) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = LogLevel(event.level)
        // `logLevel` cannot say "off" to swift-log, so the label's own level is checked here again.
        guard level >= (levelOverride ?? label.level) else { return }
        label.core._withUnsafeGuaranteedRef { core in
            core.appendText(
                level: level, label: label, message: event.message.description,
                metadata: encodedMetadata(event, redact: core.redactSensitiveValues), file: event.file, line: event.line)
        }
    }

    /// Handler metadata, then the provider's, then the call's (later sources win), sorted by key.
    private func encodedMetadata(_ event: LogEvent, redact: Bool) -> EncodedMetadata {
        let provided = metadataProvider?.get() ?? [:]
        let explicit = event.metadata ?? [:]
        guard !metadata.isEmpty || !provided.isEmpty || !explicit.isEmpty || event.error != nil else {
            return EncodedMetadata()
        }
        var merged = metadata
        merged.merge(provided) { _, new in new }
        merged.merge(explicit) { _, new in new }
        var entries = merged.map { (key: String($0.key.utf8.prefix(1024))!, value: $0.value.rendered(redact: redact)) }
        if let error = event.error { entries.append((key: "error", value: String(describing: error))) }
        entries.sort { $0.key < $1.key }
        return EncodedMetadata(entries: entries)
    }
}
