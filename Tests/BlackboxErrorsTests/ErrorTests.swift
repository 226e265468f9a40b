import Foundation
import Logging
import Synchronization
import Testing

@testable import BlackboxErrors

enum PaymentError: Int, DiagnosticCode {
    static let domain = "com.example.payment"
    case cardDeclined = 1
    case gatewayUnreachable = 2
    case ledgerCorrupt = 3

    var developerDescription: String {
        switch self {
        case .cardDeclined: "card declined by the issuer"
        case .gatewayUnreachable: "payment gateway timed out"
        case .ledgerCorrupt: "ledger checksum mismatch"
        }
    }
}

/// A localization instance per test: tests run in parallel and must not share language settings.
func localization(_ languages: [String]) -> ErrorLocalization {
    let localization = ErrorLocalization()
    localization.register(domain: PaymentError.domain, bundle: Bundle.module, subdirectory: "Localization")
    localization.preferredLanguages = languages
    return localization
}

@Suite("Localization")
struct LocalizationTests {
    @Test("the preferred language's table wins, then the base language, then the development language")
    func fallbacks() {
        let swissGerman = localization(["de-CH"])
        #expect(swissGerman.lookup("2", domain: PaymentError.domain) == "Dr Zahligsdienscht git kei Antwort.")
        #expect(swissGerman.lookup("1", domain: PaymentError.domain) == "Ihre Karte wurde abgelehnt.", "from de")
        #expect(
            swissGerman.lookup("1.reason", domain: PaymentError.domain) == "The bank refused the charge.", "from en")
        #expect(swissGerman.lookup("3", domain: PaymentError.domain) == nil, "no table has it")
        let french = localization(["fr-FR"])
        #expect(french.lookup("1", domain: PaymentError.domain) == "Your card was declined.")
        #expect(localization(["de"]).lookup("1", domain: "com.example.unregistered") == nil)
    }

    @Test("display text falls back to the developer text; logs always use the developer text")
    func displayVersusLogs() {
        let german = localization(["de_DE.UTF-8"])
        let declined = DiagnosticError(PaymentError.cardDeclined, failureReason: "issuer said no")
        #expect(german.description(of: declined) == "Ihre Karte wurde abgelehnt.")
        #expect(german.failureReason(of: declined) == "The bank refused the charge.")
        let corrupt = DiagnosticError(PaymentError.ledgerCorrupt)
        #expect(german.description(of: corrupt) == "ledger checksum mismatch")
        #expect(declined.description == "com.example.payment#1: card declined by the issuer")
    }

    @Test("locale environment values become language candidates")
    func environmentLanguages() {
        #expect(ErrorLocalization.candidates(["de_CH"]) == ["de-CH", "de_CH", "de"])
        #expect(ErrorLocalization.candidates(["en", "en-US"]) == ["en", "en-US"])
    }
}

@Suite("DiagnosticError")
struct DiagnosticErrorTests {
    @Test("domain and code from one small enum; typed matching")
    func declaring() throws {
        let (error, made) = (DiagnosticError(PaymentError.gatewayUnreachable, custom: ["gateway": "eu-1"]), #line)
        #expect(error.domain == "com.example.payment" && error.code == 2)
        #expect(error.is(PaymentError.gatewayUnreachable) && !error.is(PaymentError.cardDeclined))
        #expect(error.code(as: PaymentError.self) == .gatewayUnreachable)
        #expect(error.errorCode == 2 && DiagnosticError.errorDomain == "Blackbox.DiagnosticError")
        #expect(
            error.throwSite?.fileID == "BlackboxErrorsTests/ErrorTests.swift" && error.throwSite?.line == UInt(made))
        #expect(error.reportThrowSite == error.throwSite, "error reports group by where it was made")
        #expect(DiagnosticError(POSIXError(.EIO)).throwSite == nil, "a bridged error's site is not made up")
    }

    @Test("bridges to NSError with its own domain, user info keys and the underlying error")
    func toNSError() throws {
        let underlying = DiagnosticError.posix(ENOENT, path: "/etc/shop.conf")
        let error = DiagnosticError(
            PaymentError.gatewayUnreachable, underlying: underlying, url: URL(string: "https://pay.example.com"),
            failureReason: "no answer in 30 s", recoverySuggestion: "check the network")
        let ns = error.nsError
        #expect(ns.domain == "com.example.payment" && ns.code == 2)
        #expect(ns.userInfo[NSLocalizedFailureReasonErrorKey] as? String == "no answer in 30 s")
        #expect(ns.userInfo[NSLocalizedRecoverySuggestionErrorKey] as? String == "check the network")
        #expect((ns.userInfo[NSURLErrorKey] as? URL)?.host == "pay.example.com")
        let inner = try #require(ns.userInfo[NSUnderlyingErrorKey] as? NSError)
        #expect(inner.domain == NSPOSIXErrorDomain && inner.code == Int(ENOENT))
        #expect(inner.userInfo[NSFilePathErrorKey] as? String == "/etc/shop.conf")
    }

    @Test("bridges from NSError and POSIX errors, keeping the chain")
    func fromNSError() throws {
        let posix = NSError(domain: NSPOSIXErrorDomain, code: Int(EACCES))
        let outer = NSError(
            domain: "com.example.files", code: 9,
            userInfo: [
                NSUnderlyingErrorKey: posix, NSFilePathErrorKey: "/var/lib/shop",
                NSLocalizedDescriptionKey: "cannot open",
            ])
        let error = DiagnosticError(outer)
        #expect(error.domain == "com.example.files" && error.code == 9 && error.developerDescription == "cannot open")
        #expect(error.userInfo.filePath == "/var/lib/shop")
        let chain = error.causeChain
        #expect(chain.count == 2 && chain[1].posixCode == .EACCES)
        #expect(chain[1].developerDescription == String(cString: strerror(EACCES)))
        #expect(DiagnosticError(POSIXError(.ENOSPC)).posixCode == .ENOSPC)
        #expect(DiagnosticError(error).is(PaymentError.cardDeclined) == false)
        #expect(DiagnosticError.posix(EPIPE).posixCode == .EPIPE)
    }

    /// The synchronous `RecoverableError` entry point (async contexts pick the async overload).
    func attemptSynchronously(_ error: DiagnosticError, _ index: Int) -> Bool {
        error.attemptRecovery(optionIndex: index)
    }

    @Test("recovery options and attempters, sync and async")
    func recovery() async throws {
        let attempts = Mutex<[Int]>([])
        let sync = DiagnosticError(
            PaymentError.gatewayUnreachable,
            recovery: Recovery(options: ["Retry", "Cancel"]) { index in
                attempts.withLock { $0.append(index) }
                return index == 0
            })
        #expect(sync.recoveryOptions.count == 2)
        #expect(attemptSynchronously(sync, 0) == true)
        #expect(attemptSynchronously(sync, 1) == false)
        #expect(attemptSynchronously(sync, 7) == false, "out of range: no call")
        #expect(attempts.withLock { $0 } == [0, 1])

        let async = DiagnosticError(
            PaymentError.gatewayUnreachable,
            recovery: Recovery(options: ["Retry"]) { (index: Int) async -> Bool in
                try? await Task.sleep(for: .milliseconds(5))
                return index == 0
            })
        #expect(await async.attemptRecovery(optionIndex: 0) == true)
        #expect(attemptSynchronously(async, 0) == true, "the sync entry point waits for the async attempter")
    }
}

/// Captures log records for the logging helper tests.
final class RecordingHandler: LogHandler, @unchecked Sendable {
    let records = Mutex<[(Logger.Level, String, Logger.Metadata?)]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        records.withLock { $0.append((event.level, event.message.description, event.metadata)) }
    }
}

@Suite("Logging errors")
struct LoggingErrorTests {
    @Test("logErrors logs domain, code and the chain, then rethrows the same error")
    func logAndRethrow() throws {
        let handler = RecordingHandler()
        let logger = Logger(label: "test") { _ in handler }
        let thrown = DiagnosticError(PaymentError.cardDeclined, underlying: DiagnosticError.posix(ECONNRESET))
        #expect(throws: DiagnosticError.self) {
            try logErrors(to: logger, "charging") { () throws -> Int in throw thrown }
        }
        let records = handler.records.withLock { $0 }
        #expect(records.count == 1)
        let (level, message, metadata) = try #require(records.first)
        #expect(level == .error)
        #expect(
            message.hasPrefix("charging: com.example.payment#1: card declined by the issuer <- NSPOSIXErrorDomain#"))
        #expect(metadata?["error.domain"] == "com.example.payment" && metadata?["error.code"] == "1")
        #expect(metadata?["error.chain"] == .array(["com.example.payment#1", "NSPOSIXErrorDomain#\(ECONNRESET)"]))
        #expect(logErrors(to: logger) { 42 } == 42)
        #expect(handler.records.withLock { $0.count } == 1, "success logs nothing")
    }
}
