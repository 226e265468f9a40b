import BlackboxFormat
import BlackboxSentry
import Crypto
import Foundation

/// The key that groups occurrences of the same problem (docs/collector.md, "Grouping").
///
/// Version 4: `kind | what failed | culprit`, so that the same bug in a debug and a release build, and
/// on x86 and arm64, is one group:
/// - what failed: for a Swift trap its check (`trap:Index out of range`, read alike from a release
///   build's `Swift runtime failure` marker and a debug build's `Fatal error: …`; `SwiftTrap`), else
///   for a captured error `type:<error type>`, else the signal's name (`SIGSEGV`), else `-`;
/// - for a captured error whose report names where it was thrown (`error.site.*`: a `DiagnosticError`'s
///   own site, `Blackbox.thrown`, a log call with `error:`), that site: `site:<file> <function>`, the
///   line left out so that an edit above it does not split the group; in top-level code, which has no
///   function, `site:<file>:<line>` (version 4);
/// - else the culprit: the innermost symbol of the app's own code (`AppCode`: not the system, the Swift
///   runtime, Blackbox, thunks or packages the app depends on), its name normalized (no addresses,
///   offsets, generic specialization markers, closure numbers, parameter or return types). Callers are
///   left out: an optimizer inlines and tail-calls them away, so a release build's stack below the
///   culprit differs from a debug build's (version 2 took the top three functions, and the signal,
///   and split every Swift trap into a debug and a release group);
/// - with no culprit (unsymbolicated, or only system frames), for an error or failed assertion the
///   request's route, else the normalized fatal message or reason, then the unsymbolicated
///   image-relative offsets of the top frames.
/// The stored signature is the sha256 of that text. The title is the headline of the report page:
/// what failed in words (`Index out of range`), then the culprit's simplified name.
///
/// A Sentry event's `fingerprint` replaces the text: `kind | fingerprint:<values>`, with
/// `{{ default }}` standing for the text above (Sentry's rule).
public enum CrashSignature {
    public static let version = 4

    /// The metadata entry a Sentry event's `fingerprint` travels in, its values joined by the separator.
    static let fingerprintKey = SentryEvent.fingerprintKey
    static let fingerprintSeparator = SentryEvent.fingerprintSeparator

    public struct Result: Sendable, Equatable {
        public var hash: String
        public var text: String
        public var title: String
    }

    static let maxTitleCharacters = 300

    public static func compute(_ report: CrashReport) -> Result {
        var parts = [report.kind.rawValue]
        let trap = SwiftTrap(report)
        let culprit = AppCode(report).culprit()
        let errorType = report.kind == .error ? report.metadata["error.type"] ?? "?" : nil
        if let trap {
            parts.append("trap:" + normalizeMessage(trap.check))
        } else if let errorType {
            parts.append("type:" + errorType)
        } else {
            parts.append(report.signal?.name ?? "-")
        }
        // A stall (a ServiceGroup that does not finish) is no thread's: its reason says what is stuck.
        if let stall = stallReason(report) {
            parts.append("stall:" + normalizeMessage(stall))
        } else if let site = ThrowSite(report) {
            // Top-level code (a route's closure in main.swift) has no function to tell its throws apart.
            parts.append(
                site.function.isEmpty
                    ? "site:\(site.location)" : "site:\(site.file) \(normalizeFunction(site.function))")
        } else if let culprit {
            parts.append(normalizeFunction(culprit.function))
        } else if let route = requestRoute(report) {
            parts.append("route:" + route)
        } else if let message = report.reason ?? report.fatalMessage {
            parts.append("message:" + normalizeMessage(message))
        } else {
            parts += report.frames.prefix(3).map { frame in
                let image = report.image(of: frame)
                let name = image.map { String($0.path.split(separator: "/").last ?? "") } ?? "?"
                return "\(name)+\(frame.imageOffset ?? "?")"
            }
        }
        var text = parts.joined(separator: " | ")
        if let fingerprint = report.metadata[Self.fingerprintKey] {
            let values = fingerprint.components(separatedBy: Self.fingerprintSeparator).map {
                $0 == "{{ default }}" || $0 == "{{default}}" ? text : $0
            }
            text = [report.kind.rawValue, "fingerprint:" + values.joined(separator: " | ")].joined(separator: " | ")
        }
        let hash = SHA256.hash(data: Data(("v\(version)|" + text).utf8)).lowercaseHex
        let title = headline(report, trap: trap, culprit: culprit)
        // The title is for lists: a function name of megabytes must not make every page that large.
        let shownTitle = title.count > Self.maxTitleCharacters ? title.prefix(Self.maxTitleCharacters) + "…" : title
        return Result(hash: hash, text: text, title: shownTitle)
    }

    /// For an error or failed assertion with none of the app's frames on its stack (captured by a
    /// framework integration's middleware, below the handler that threw), the request's route, as
    /// Sentry names a transaction: `GET /pay`. One error type thrown by ten routes is then ten groups,
    /// each saying which handler threw, not one titled by the middleware.
    static func requestRoute(_ report: CrashReport) -> String? {
        guard report.kind == .error || report.kind == .nonfatal, let route = report.scope?["route"], !route.isEmpty
        else { return nil }
        let method = report.scope?["method"].map { $0 + " " } ?? ""
        return String((method + route).prefix(200))
    }

    /// `Index out of range in shop.Cart.price(at:)`: what failed (a trap's message without the standard
    /// library's file and line, a captured error's type, the signal, or else the kind: `nonfatal`,
    /// `hang`), then the culprit's simplified name; with no culprit, the reason or where the top frame is.
    static func headline(_ report: CrashReport) -> String {
        headline(report, trap: SwiftTrap(report), culprit: AppCode(report).culprit())
    }

    /// The headline from what `compute` has found already (finding the culprit scans every stack).
    private static func headline(_ report: CrashReport, trap: SwiftTrap?, culprit: CrashReport.Symbol?) -> String {
        let label =
            trap?.summary
            ?? (report.kind == .error ? report.metadata["error.type"] : nil) ?? report.signal?.name
        let reason = (report.reason ?? report.fatalMessage).map { String($0.split(separator: "\n").first ?? "") }
        if let stall = stallReason(report) { return "\(report.kind.rawValue): \(stall.prefix(160))" }
        if let site = ThrowSite(report) {
            let what = label ?? report.kind.rawValue
            if site.function.isEmpty { return "\(what) at \(site.location)" }
            return "\(what) in \(SwiftNames.simplified(site.function)) (\(site.location))"
        }
        if let culprit {
            return "\(label ?? report.kind.rawValue) in \(SwiftNames.simplified(culprit.function))"
        }
        let what = label ?? report.kind.rawValue
        if let route = requestRoute(report) { return "\(what) in \(route)" }
        guard trap == nil else { return what }
        if let reason { return "\(what): \(normalizeMessage(reason).prefix(120))" }
        guard let frame = report.frames.first else { return what }
        let image = report.image(of: frame).map { String($0.path.split(separator: "/").last ?? "") } ?? "?"
        return "\(what) at \(image)+\(frame.imageOffset ?? "?")"
    }

    /// A stall's reason: a `hang` report that is no thread's (`hang.stall`: a ServiceGroup that does
    /// not finish shutting down), which says what is stuck where the main thread's frame would not.
    static func stallReason(_ report: CrashReport) -> String? {
        guard report.kind == .hang, report.metadata["hang.stall"] != nil else { return nil }
        return report.reason.map { String($0.split(separator: "\n").first ?? "") }
    }

    /// Where a captured error was thrown, as its report's metadata says (`ThrowSite` in the library).
    struct ThrowSite {
        var file: String
        var line: String?
        var function: String

        /// Capped: the values come from the network like the rest of the report.
        init?(_ report: CrashReport) {
            guard report.kind == .error, let file = report.metadata["error.site.file"], !file.isEmpty else {
                return nil
            }
            self.file = String(file.prefix(200))
            self.line = report.metadata["error.site.line"].flatMap { UInt($0) }.map(String.init)
            // `#function` in top-level code, closures there included, is the module's name (or `main`).
            let function = String((report.metadata["error.site.function"] ?? "").prefix(200))
            let module = file.split(separator: "/").first.map(String.init)
            self.function = function == module || function == "main" ? "" : function
        }

        /// `shop/Payments.swift:42`
        var location: String { line.map { "\(file):\($0)" } ?? file }
    }

    /// `specialized closure #2 (Swift.Int) -> () in app.run(x: Swift.Int) -> ()` → `closure in app.run(x:)`.
    static func normalizeFunction(_ name: String) -> String {
        // Each rewrite only where its pattern can match: most names (every Python or JavaScript
        // frame of a Sentry event) have none, and the passes were 3 % of the collector's CPU there.
        var result = InAppRules.withoutSpecializationMarkers(name)
        for marker in ["specialized ", "merged ", "static ", "@objc ", "outlined "]
        where UTF8Search.contains(marker, in: result) {
            result = result.replacingOccurrences(of: marker, with: "")
        }
        // `implicit closure #2` too: the pattern matches its tail.
        if UTF8Search.contains("closure #", in: result) {
            result = Patterns.closureNumber.replacingMatches(in: result, with: "closure")
        }
        // Drop parameter types and return types: `f(x: Swift.Int) -> Swift.Int` → `f(x:)`.
        if UTF8Search.contains("(", in: result) {
            result = Patterns.parameters.replacingMatches(in: result, with: "(…)")
        }
        if UTF8Search.contains("0x", in: result) { result = Patterns.hexNumber.replacingMatches(in: result, with: "") }
        if UTF8Search.contains(" + ", in: result) {
            result = Patterns.trailingOffset.replacingMatches(in: result, with: "")
        }
        return result.trimmingCharacters(in: .whitespaces)
    }

    /// Numbers, hex and quoted values vary between occurrences of the same problem.
    static func normalizeMessage(_ message: String) -> String {
        var result = message.split(separator: "\n").first.map(String.init) ?? ""
        result = Patterns.hexNumber.replacingMatches(in: result, with: "0x_")
        result = Patterns.decimalNumber.replacingMatches(in: result, with: "N")
        result = Patterns.quoted.replacingMatches(in: result, with: "\"_\"")
        return result
    }

    /// Compiled once: `replacingOccurrences(of:with:options: .regularExpression)` compiled its pattern
    /// on every call, 1.7 % of the collector's CPU while it stored Sentry events (every event is a
    /// report, and each report's signature normalizes a name and a message).
    enum Patterns {
        static let closureNumber = RegexReplacement(#"closure #\d+"#)
        static let parameters = RegexReplacement(#"\(([^()]*?)\)( -> [^ ]+)?"#)
        static let hexNumber = RegexReplacement(#"0x[0-9a-fA-F]+"#)
        static let trailingOffset = RegexReplacement(#" \+ \d+$"#)
        static let decimalNumber = RegexReplacement(#"\d+"#)
        static let quoted = RegexReplacement(#""[^"]*""#)
    }
}
