import Synchronization

/// Where an error was thrown, or where the app first handled it: the source file (`#fileID`), line and
/// function. An error report carries it, and the collector groups and titles captured errors by it
/// (`error.site.*` in the report's metadata): a framework integration captures a handler's error in its
/// middleware, whose stack holds none of the app's frames, so without a site one error type thrown by
/// ten handlers would read as thrown by the middleware.
///
/// An error gives its site in one of three ways, the first found wins:
/// - it knows it (`ReportableError.reportThrowSite`; a `DiagnosticError` records where it was made);
/// - the app marked the throw: `throw Blackbox.thrown(PaymentError.declined)`;
/// - the app logged it with swift-log's `error:` (`logger.error("charge failed", error: error)`)
///   before it reached the capture: the log call's site.
/// The last two are noted in the current request's scope (`Blackbox.withScope`, which the framework
/// integrations enter per request) and matched to the captured error by its type.
public struct ThrowSite: Sendable, Hashable, CustomStringConvertible {
    public var fileID: String
    public var line: UInt
    public var function: String

    public init(fileID: String = #fileID, line: UInt = #line, function: String = #function) {
        self.fileID = fileID
        self.line = line
        self.function = function
    }

    /// `shop/Payments.swift:42`
    public var description: String { "\(fileID):\(line)" }

    /// How the site was learned, as error reports say it (`error.site.from`).
    enum Origin: String, Sendable {
        /// The error's own (`ReportableError.reportThrowSite`).
        case error
        /// `Blackbox.thrown`.
        case thrown
        /// A swift-log call with `error:`.
        case logged
    }

    /// The report metadata that carries the site (`error.site.file`, `.line`, `.function`, `.from`).
    func reportMetadata(origin: Origin) -> [String: String] {
        [
            "error.site.file": fileID, "error.site.line": String(line), "error.site.function": function,
            "error.site.from": origin.rawValue,
        ]
    }
}

extension Blackbox {
    /// Returns `error` unchanged after noting this line as its throw site in the current request's
    /// scope: `throw Blackbox.thrown(PaymentError.declined)`. When the error is then captured in that
    /// request (by a framework integration's middleware or `Blackbox.capture`), its report is grouped
    /// and titled by this site. Outside any scope nothing is noted. The error's type is not changed,
    /// so `catch` clauses match it as before.
    public static func thrown<Failure: Error>(
        _ error: Failure, fileID: String = #fileID, line: UInt = #line, function: String = #function
    ) -> Failure {
        ScopeBinding.current?.throwSites.note(
            error, at: ThrowSite(fileID: fileID, line: line, function: function), origin: .thrown)
        return error
    }
}

/// The throw sites noted while one request runs (`Blackbox.thrown`, swift-log calls with `error:`),
/// shared by its nested scopes. A few, the latest kept: the capture matches the error it reports by
/// type, and a request that throws many errors of one type is reported by the last one's site.
final class ThrowSiteNotes: Sendable {
    private struct Note {
        var errorType: ObjectIdentifier
        var site: ThrowSite
        var origin: ThrowSite.Origin
        /// The site's strings by their words (`CallSiteIdentity.words`): a log call compares its own
        /// site with the last note without copying a string (a retry loop logs one site many times).
        var identity: LoggedSite

        init(errorType: ObjectIdentifier, site: ThrowSite, origin: ThrowSite.Origin) {
            self.errorType = errorType
            self.site = site
            self.origin = origin
            identity = LoggedSite(file: site.fileID, line: site.line, function: site.function)
        }
    }

    /// A site by its strings' words, the way a log call meets it again: its file and line as a capture
    /// gate knows them, and its function. Words that differ may still be the same text (a string built
    /// at run time): the site is then noted twice, which is harmless.
    private struct LoggedSite: Equatable {
        let fileAndLine: CaptureGate.Identity
        let function0: UInt
        let function1: UInt

        @inline(__always)
        init(file: String, line: UInt, function: String) {
            fileAndLine = CaptureGate.Identity(file: file, line: line)
            (function0, function1) = CallSiteIdentity.words(function)
        }
    }

    private static let capacity = 8

    private struct State {
        var notes: [Note] = []
        /// Error types a log call of this request captured already (`BlackboxLogHandler`): a later
        /// capture of the same type in the request (the framework's, when the handler logged the
        /// error and threw it on) reports it no second time. A few, searched in place (a set hashed
        /// the type on every log call); past `capacity` the oldest is forgotten.
        var captured: [ObjectIdentifier] = []

        mutating func noteCaptured(_ errorType: ObjectIdentifier) {
            guard !captured.contains(errorType) else { return }
            if captured.count == ThrowSiteNotes.capacity { captured.removeFirst() }
            captured.append(errorType)
        }

        mutating func append(_ note: Note) {
            if notes.count == ThrowSiteNotes.capacity { notes.removeFirst() }
            notes.append(note)
        }

        /// Whether the latest note is a log call's of `errorType` at `site`.
        func lastIsLogged(_ errorType: ObjectIdentifier, at site: LoggedSite) -> Bool {
            let last = notes.count - 1
            return last >= 0 && notes[last].origin == .logged && notes[last].errorType == errorType
                && notes[last].identity == site
        }
    }

    /// The last note when it is a log call's, as the words a repeated call compares, behind a seqlock:
    /// written under `state`'s lock, read by a log call without it (the lock's two atomic
    /// read-modify-writes were most of what noting cost a call in a request's scope, issue 52). The
    /// version is odd while the words change; a reader that finds it odd or changed takes the lock.
    private struct LastLoggedNote: ~Copyable, Sendable {
        private let version = Atomic<UInt>(0)
        /// `ObjectIdentifier` bits of the note's error type; 0 when the last note is not a log call's.
        private let errorType = Atomic<UInt>(0)
        private let file0 = Atomic<UInt>(0)
        private let file1 = Atomic<UInt>(0)
        private let line = Atomic<UInt>(0)
        private let function0 = Atomic<UInt>(0)
        private let function1 = Atomic<UInt>(0)
        /// Whether the request captured the type already (`captured`), and whether a thrown note of the
        /// type is kept (a call then learns that site: `noteLogged`'s result).
        private let typeFacts = Atomic<UInt>(0)
        private static let captured: UInt = 1
        private static let thrown: UInt = 2

        /// Whether a log call of `type` at `site` (capturing or not) would change nothing and learn no
        /// thrown site.
        @inline(__always)
        func isRepeated(_ type: ObjectIdentifier, at site: LoggedSite, captured: Bool) -> Bool {
            let before = version.load(ordering: .acquiring)
            let facts = typeFacts.load(ordering: .relaxed)
            let same =
                errorType.load(ordering: .relaxed) == UInt(bitPattern: type)
                && file0.load(ordering: .relaxed) == site.fileAndLine.file0
                && file1.load(ordering: .relaxed) == site.fileAndLine.file1
                && line.load(ordering: .relaxed) == site.fileAndLine.line
                && function0.load(ordering: .relaxed) == site.function0
                && function1.load(ordering: .relaxed) == site.function1
                && facts & Self.thrown == 0 && (!captured || facts & Self.captured != 0)
            atomicMemoryFence(ordering: .acquiring)
            return same && before & 1 == 0 && version.load(ordering: .relaxed) == before
        }

        /// Under the notes' lock, after every change.
        func publish(_ state: borrowing State) {
            let before = version.load(ordering: .relaxed)
            version.store(before &+ 1, ordering: .relaxed)
            atomicMemoryFence(ordering: .releasing)
            if let last = state.notes.last, last.origin == .logged {
                errorType.store(UInt(bitPattern: last.errorType), ordering: .relaxed)
                file0.store(last.identity.fileAndLine.file0, ordering: .relaxed)
                file1.store(last.identity.fileAndLine.file1, ordering: .relaxed)
                line.store(last.identity.fileAndLine.line, ordering: .relaxed)
                function0.store(last.identity.function0, ordering: .relaxed)
                function1.store(last.identity.function1, ordering: .relaxed)
                let thrown = state.notes.contains { $0.errorType == last.errorType && $0.origin == .thrown }
                let facts =
                    (state.captured.contains(last.errorType) ? Self.captured : 0) | (thrown ? Self.thrown : 0)
                typeFacts.store(facts, ordering: .relaxed)
            } else {
                errorType.store(0, ordering: .relaxed)
            }
            version.store(before &+ 2, ordering: .releasing)
        }
    }

    private let state = Mutex(State())
    /// The last note, when a log call's, for a call that repeats it to find without the lock.
    private let lastLogged = LastLoggedNote()

    func wasCaptured(_ error: any Error) -> Bool {
        state.withLock { $0.captured.contains(ObjectIdentifier(type(of: error))) }
    }

    func note(_ error: any Error, at site: ThrowSite, origin: ThrowSite.Origin) {
        let note = Note(errorType: ObjectIdentifier(type(of: error)), site: site, origin: origin)
        state.withLock { state in
            state.append(note)
            lastLogged.publish(state)
        }
    }

    /// A log call's error (of type `errorType`), in one lock: notes the call (`file`, `line`,
    /// `function`) as the site of errors of its type, and returns the site its capture is grouped by
    /// when that is not the call itself: a site `Blackbox.thrown` noted (`site(of:)` puts those
    /// first). `captured`: the call captures it (`wasCaptured` then says so). The strings are
    /// borrowed, and copied only into a new note: a call in a request's scope pays for the lock and a
    /// few words' comparison (issue 52).
    func noteLogged(
        _ errorType: ObjectIdentifier, file: String, line: UInt, function: String, captured isCaptured: Bool
    ) -> ThrowSite? {
        let identity = LoggedSite(file: file, line: line, function: function)
        // A request that logs one error at one line many times (a retry loop) notes it once: a call
        // that would change nothing, and learn no thrown site, takes no lock.
        if lastLogged.isRepeated(errorType, at: identity, captured: isCaptured) { return nil }
        return noteLoggedUnderLock(
            errorType, identity: identity, file: file, line: line, function: function, captured: isCaptured)
    }

    /// `noteLogged`'s change, under the lock. Not inlined: inlined into every call with an error in a
    /// scope (the lock, a `ThrowSite` made from the strings, the notes' array), it cost the calls that
    /// repeat a note and never get here ~40 ns of ~1 µs (issue 52: W5P in a scope 1.103x → 1.061x of the
    /// same call without `error:`), far more than its code's share of their profile.
    @inline(never)
    private func noteLoggedUnderLock(
        _ errorType: ObjectIdentifier, identity: LoggedSite, file: String, line: UInt, function: String,
        captured isCaptured: Bool
    ) -> ThrowSite? {
        state.withLock { state in
            if isCaptured { state.noteCaptured(errorType) }
            if !state.lastIsLogged(errorType, at: identity) {
                state.append(
                    Note(
                        errorType: errorType, site: ThrowSite(fileID: file, line: line, function: function),
                        origin: .logged))
            }
            lastLogged.publish(state)
            return state.notes.last { $0.errorType == errorType && $0.origin == .thrown }?.site
        }
    }

    /// The site noted for an error of `error`'s type: a `Blackbox.thrown` one before a log call's (the
    /// log call is where the error was handled, after it was thrown), the latest of each.
    func site(of error: any Error) -> (site: ThrowSite, origin: ThrowSite.Origin)? {
        let errorType = ObjectIdentifier(type(of: error))
        return state.withLock { Self.site(of: errorType, in: $0.notes) }
    }

    private static func site(
        of errorType: ObjectIdentifier, in notes: [Note]
    ) -> (site: ThrowSite, origin: ThrowSite.Origin)? {
        let note =
            notes.last { $0.errorType == errorType && $0.origin == .thrown } ?? notes.last { $0.errorType == errorType }
        return note.map { ($0.site, $0.origin) }
    }
}
