import Foundation

/// Display-time localization: one string table per error domain, `<lang>.lproj/<domain>.strings` in a
/// bundle's resources, keyed by the code (`"1" = "Die Karte wurde abgelehnt.";`), with optional
/// `<code>.reason` and `<code>.suggestion` keys and recovery option titles keyed by their developer
/// text. Languages are tried in order (`de-CH`, then `de`), then the table's development language,
/// then the developer text. Logs never go through here.
public final class ErrorLocalization: @unchecked Sendable {
    public static let shared = ErrorLocalization()

    private let lock = NSLock()
    private var sources: [String: Source] = [:]
    private var cache: [String: [String: String]] = [:]  // "<domain>|<language>" -> table
    private var languagesOverride: [String]?

    public init() {}

    private struct Source {
        var directory: URL?
        var developmentLanguage: String
    }

    /// Makes `domain`'s tables come from `bundle` (e.g. `Bundle.module`), optionally from a folder
    /// inside its resources (`.copy("Localization")` keeps the folder).
    public func register(
        domain: String, bundle: Bundle, subdirectory: String? = nil, developmentLanguage: String = "en"
    ) {
        let directory = subdirectory.map { bundle.resourceURL?.appendingPathComponent($0) } ?? bundle.resourceURL
        lock.withLock {
            sources[domain] = Source(directory: directory, developmentLanguage: developmentLanguage)
            cache = cache.filter { !$0.key.hasPrefix(domain + "|") }
        }
    }

    /// The languages to try, most preferred first. Default: `LANGUAGE` (a colon list), then `LC_ALL`,
    /// `LC_MESSAGES`, `LANG` (`de_CH.UTF-8` becomes `de-CH`).
    public var preferredLanguages: [String] {
        get { lock.withLock { languagesOverride } ?? Self.languagesFromEnvironment() }
        set { lock.withLock { languagesOverride = newValue } }
    }

    func description(of error: DiagnosticError) -> String {
        lookup("\(error.code)", domain: error.domain) ?? error.developerDescription
    }

    func failureReason(of error: DiagnosticError) -> String? {
        guard let reason = error.userInfo.failureReason else { return nil }
        return lookup("\(error.code).reason", domain: error.domain) ?? reason
    }

    func recoverySuggestion(of error: DiagnosticError) -> String? {
        guard let suggestion = error.userInfo.recoverySuggestion else { return nil }
        return lookup("\(error.code).suggestion", domain: error.domain) ?? suggestion
    }

    func optionTitle(_ title: String, domain: String) -> String { lookup(title, domain: domain) ?? title }

    /// The localized string for `key`, or nil when no table in any acceptable language has it.
    public func lookup(_ key: String, domain: String) -> String? {
        guard let source = lock.withLock({ sources[domain] }) else { return nil }
        for language in Self.candidates(preferredLanguages) + [source.developmentLanguage] {
            if let value = table(domain: domain, language: language, directory: source.directory)[key] { return value }
        }
        return nil
    }

    private func table(domain: String, language: String, directory: URL?) -> [String: String] {
        let cacheKey = "\(domain)|\(language)"
        if let cached = lock.withLock({ cache[cacheKey] }) { return cached }
        var table: [String: String] = [:]
        if let resources = directory {
            let url = resources.appendingPathComponent("\(language).lproj").appendingPathComponent("\(domain).strings")
            if let data = try? Data(contentsOf: url),
                let parsed = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: String]
            {
                table = parsed
            }
        }
        lock.withLock { cache[cacheKey] = table }
        return table
    }

    /// `de-CH` -> `de-CH`, `de_CH`, `de`: the spellings .lproj folders use.
    static func candidates(_ languages: [String]) -> [String] {
        var result: [String] = []
        for language in languages {
            let normalized = language.replacingOccurrences(of: "_", with: "-")
            for candidate in [normalized, language, String(normalized.split(separator: "-").first ?? "")]
            where !candidate.isEmpty && !result.contains(candidate) {
                result.append(candidate)
            }
        }
        return result
    }

    static func languagesFromEnvironment() -> [String] {
        let environment = ProcessInfo.processInfo.environment
        var languages: [String] = []
        if let list = environment["LANGUAGE"], !list.isEmpty {
            languages += list.split(separator: ":").map(String.init)
        }
        for key in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment[key], !value.isEmpty {
                languages.append(value)
                break
            }
        }
        return languages.compactMap { value in
            // de_CH.UTF-8@euro -> de-CH; C and POSIX mean "no preference".
            let base = value.split(separator: ".").first.map(String.init) ?? value
            let language = (base.split(separator: "@").first.map(String.init) ?? base)
                .replacingOccurrences(of: "_", with: "-")
            return language == "C" || language == "POSIX" || language.isEmpty ? nil : language
        }
    }
}
