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
        if event.error != nil { return logWithError(event, level: level) }
        // Cores are immortal, so the core is used without retaining it: every thread logs through
        // the same core, and a retain/release pair on it per call (what `unowned(unsafe)` compiled
        // to) made all callers bounce its reference count's cache line between cores.
        label.core._withUnsafeGuaranteedRef { core in
            let provider = core.metadataProvider
            let encoded: EncodedMetadata
            if metadata.isEmpty && provider == nil && event.metadata?.isEmpty != false {
                encoded = EncodedMetadata()
            } else {
                encoded = encodedMetadata(
                    explicit: event.metadata, errorEntry: nil, provider: provider, redact: core.redactSensitiveValues
                )
            }
            core.appendText(
                level: level, label: label, message: event.message.description, metadata: encoded, file: event.file,
                function: event.function, line: event.line)
        }
    }

    /// A call with an `error:`: its line carries the error's type name, the writer prints its
    /// description (`DeferredErrorDescriptions`). Apart, so that a call without one pays nothing for it.
    /// The error goes on by its reference (`BorrowedError`), not copied.
    @inline(never)
    private func logWithError(_ event: LogEvent, level: LogLevel) {
        guard let error = BorrowedError(event.error) else { return }
        label.core._withUnsafeGuaranteedRef { core in log(event, level: level, error: error, core: core) }
    }

    private func log(_ event: LogEvent, level: LogLevel, error: BorrowedError, core: LoggingCore) {
        // Not `withFacts(of:)`: the stack a capture takes here must show no frame between this
        // handler's and the app's call but the ones `CapturedStack.withoutMachinery` leaves out.
        let (kept, owned) = core.knownErrorTypes.facts(of: error)
        defer { if owned { kept.release() } }
        var error = error
        // A plain value is copied for the writer instead of held; its facts must outlive the record.
        if !owned && kept._withUnsafeGuaranteedRef({ $0.inlineSize != nil }) { error.inlineFacts = kept }
        kept._withUnsafeGuaranteedRef { facts in
            let capturing = level >= .error && core.capturesLoggedErrors
            let scope = ScopeBinding.currentUnretainedIfAnyBound
            // Inside a request's scope the call is noted as its error's site (`ThrowSite`); a site
            // `Blackbox.thrown` noted for the type is the capture's key instead of the call's own.
            let thrownSite = scope?._withUnsafeGuaranteedRef {
                $0.throwSites.noteLogged(
                    facts.type, file: event.file, line: event.line, function: event.function, captured: capturing)
            }
            // A site whose report is not due yet lets the writer count the call (`CaptureGates`).
            let now = wallClockNanoseconds()
            let gate =
                capturing && thrownSite == nil && !facts.isReportable
                ? facts.gates.gate(file: event.file, line: event.line) : nil
            let countedByWriter = gate?._withUnsafeGuaranteedRef { $0.isClosed(at: now) } == true
            let encoded = encodedMetadata(
                explicit: event.metadata, errorEntry: facts.errorEntry, provider: core.metadataProvider,
                redact: core.redactSensitiveValues)
            let held = core.appendText(
                level: level, label: label, message: event.message.description, metadata: encoded, file: event.file,
                function: event.function, line: event.line, timestamp: now, describingLater: error,
                captureCountedByWriter: countedByWriter)
            guard capturing else { return }
            if countedByWriter {
                // A record the writer does not see with its error (cut, or written directly) is counted here.
                if !held { gate?._withUnsafeGuaranteedRef { $0.countSuppressed() } }
                return
            }
            capture(error.error, facts, of: event, inScope: scope != nil, thrownSite: thrownSite, gate: gate, now: now)
        }
    }

    /// A log call's error is a captured error (`capturesLoggedErrors`, at `.error` and above), its line
    /// the capture's. Inside a request's scope the report names its site: the call's own, or the one
    /// `Blackbox.thrown` noted (`thrownSite`). Not inlined: a call at a closed gate never gets here,
    /// and inlined, its frame's setup (a captured stack's storage) was paid by every call.
    @inline(never)
    private func capture(
        _ error: any Error, _ errorType: ErrorTypeFacts, of event: LogEvent, inScope: Bool, thrownSite: ThrowSite?,
        gate: Unmanaged<CaptureGate>?, now: UInt64
    ) {
        let noted: (site: ThrowSite, origin: ThrowSite.Origin)? =
            if let thrownSite { (thrownSite, .thrown) } else if inScope {
                (ThrowSite(fileID: event.file, line: event.line, function: event.function), .logged)
            } else { nil }
        ErrorCapture.reportLogged(
            error, errorType, message: event.message.description, file: event.file, function: event.function,
            line: event.line, noted: noted, gate: gate, now: now)
    }

    /// Handler metadata, then the provider's, then the call's (later sources win), sorted by key.
    ///
    /// Merged in arrays, not a dictionary: a server's line has about eight values, and merging them
    /// into dictionaries hashed every key twice and grew a table per call (most of what a call with
    /// metadata cost on the caller's thread, issue 36). Sorted by key, then by source, the last of
    /// each run of equal keys is the one that wins; only the winners are rendered.
    private func encodedMetadata(
        explicit: Logger.Metadata?, errorEntry: UnsafeRawBufferPointer?, provider: Logger.MetadataProvider?,
        redact: Bool
    ) -> EncodedMetadata {
        let provided = provider?.get() ?? [:]
        let explicit = explicit ?? [:]
        guard !metadata.isEmpty || !provided.isEmpty || !explicit.isEmpty || errorEntry != nil else {
            return EncodedMetadata()
        }
        // Keys and values apart, appended source by source, so a key's position orders its sources;
        // positions are sorted, not values (a metadata value is moved only through runtime calls).
        var keys: [String] = []
        var values: [Logger.MetadataValue] = []
        keys.reserveCapacity(metadata.count + provided.count + explicit.count)
        values.reserveCapacity(keys.capacity)
        for (key, value) in metadata {
            keys.append(key)
            values.append(value)
        }
        for (key, value) in provided {
            keys.append(key)
            values.append(value)
        }
        for (key, value) in explicit {
            keys.append(key)
            values.append(value)
        }
        let order = keys.indices.sorted { keys[$0] != keys[$1] ? keys[$0] < keys[$1] : $0 < $1 }
        var entries: [(key: String, value: String)] = []
        entries.reserveCapacity(order.count)
        for (position, index) in order.enumerated()
        where position == order.count - 1 || keys[order[position + 1]] != keys[index] {
            let key = keys[index]
            entries.append(
                (
                    key: key.utf8.count <= 1024 ? key : String(key.utf8.prefix(1024)) ?? "?",
                    value: values[index].rendered(redact: redact)
                ))
        }
        // The error's type name; the writer prints its description in its place (printing it here
        // took several times the whole call: `DeferredErrorDescriptions`).
        return EncodedMetadata(entries: entries, errorEntry: errorEntry)
    }
}
