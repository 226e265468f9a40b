import Foundation

/// A regular expression compiled once and replaced by a fixed text, as
/// `String.replacingOccurrences(of:with:options: .regularExpression)` does (same engine, same
/// matches) without compiling the pattern on each call. The pattern is a literal of this module, so
/// one that does not compile is a programming error.
struct RegexReplacement: @unchecked Sendable {
    // NSRegularExpression is immutable once made and documented safe to use from several threads.
    private let regex: NSRegularExpression

    init(_ pattern: String) {
        do {
            regex = try NSRegularExpression(pattern: pattern)
        } catch {
            preconditionFailure("invalid pattern \(pattern): \(error)")
        }
    }

    /// Every match replaced by `replacement`, taken literally.
    func replacingMatches(in text: String, with replacement: String) -> String {
        regex.stringByReplacingMatches(
            in: text, range: NSRange(text.startIndex..., in: text),
            withTemplate: NSRegularExpression.escapedTemplate(for: replacement))
    }
}
