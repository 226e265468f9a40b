import Logging

/// A swift-log metadata value attribute: values marked `.sensitive` are written as `<redacted>`
/// (unless `BlackboxConfiguration.redactSensitiveValues` is false). Redaction happens on the calling
/// thread, before the value reaches the journal file.
///
/// ```swift
/// logger.info("signed in", metadata: ["user": "\(email, sensitivity: .sensitive)"])
/// logger.info("signed in", metadata: ["token": .sensitive(token)])
/// ```
public enum Sensitivity: Int64, Logger.MetadataValueAttributes.Attribute, Sendable {
    case `public` = 0
    case sensitive = 1
}

extension Logger.MetadataValue {
    public static func sensitive(_ value: some CustomStringConvertible & Sendable) -> Logger.MetadataValue {
        // By the attributes' subscript: their array literal boxes each element (swift-log says so).
        var attributes = Logger.MetadataValueAttributes()
        attributes[Sensitivity.self] = .sensitive
        return .attributed(value, attributes: attributes)
    }

    var isSensitive: Bool { AttributeCarrier.attributes(of: self)[Sensitivity.self] == .sensitive }
}

extension Logger.MetadataValue.StringInterpolation {
    public mutating func appendInterpolation(_ value: some CustomStringConvertible & Sendable, sensitivity: Sensitivity)
    {
        appendInterpolation(value, attributes: { $0[Sensitivity.self] = sensitivity })
    }
}

extension Logger.MetadataValue {
    /// Renders a value for the journal: text as is, dictionaries and arrays in swift-log's bracket
    /// notation, sensitive leaves (at any depth) as `<redacted>` when `redact` is set.
    func rendered(redact: Bool) -> String {
        if redact && isSensitive { return "<redacted>" }
        switch self {
        case .string(let text): return text
        case .stringConvertible(let value): return value.description
        case .array(let values): return "[" + values.map { $0.rendered(redact: redact) }.joined(separator: ", ") + "]"
        case .dictionary(let values):
            return "["
                + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.rendered(redact: redact))" }
                .joined(separator: ", ") + "]"
        }
    }
}
