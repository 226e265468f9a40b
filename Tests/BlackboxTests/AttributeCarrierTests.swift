import Logging
import Testing

@testable import Blackbox

/// The handler reads a value's attributes from swift-log's carrier without its getter's dynamic cast
/// (`AttributeCarrier`); it must answer what the getter answers, for every kind of value.
@Suite struct AttributeCarrierTests {
    /// Not the carrier, and too large for an existential's inline buffer, as the carrier is.
    struct LargeValue: CustomStringConvertible, Sendable {
        let words: (Int, Int, Int, Int, Int) = (1, 2, 3, 4, 5)
        var description: String { "large" }
    }

    enum Tier: Int64, Logger.MetadataValueAttributes.Attribute {
        case gold = 3
    }

    @Test("the resolved swift-log's carrier is recognized: private values skip the dynamic cast")
    func carrierIsRecognized() {
        // If this fails, swift-log changed its carrier: redaction still works (through the getter),
        // but every private value pays the cast again (~75 ns of a ~900 ns call, issue 52).
        #expect(AttributeCarrier.recognized != nil)
    }

    @Test("every kind of value reads the same attributes as swift-log's getter")
    func answersAsTheGetterDoes() {
        var both = Logger.MetadataValueAttributes()
        both[Tier.self] = .gold
        both[Sensitivity.self] = .sensitive
        var tierOnly = Logger.MetadataValueAttributes()
        tierOnly[Tier.self] = .gold
        let long = String(repeating: "long text, not a small string ", count: 4)
        let values: [Logger.MetadataValue] = [
            "plain", .string(long), .stringConvertible(42), .stringConvertible(LargeValue()),
            .sensitive("a@example.com"), .sensitive(long), .sensitive(LargeValue()),
            "\("s3cret", sensitivity: .sensitive)", "\("shown", sensitivity: .public)",
            "id \(7, sensitivity: .sensitive) of \(long)",
            .attributed("two", attributes: both), .attributed("tier", attributes: tierOnly),
            .attributed("none", attributes: Logger.MetadataValueAttributes()),
            ["inner": .sensitive("pw")], [.sensitive("pw"), "x"],
        ]
        for value in values {
            #expect(AttributeCarrier.attributes(of: value) == value.attributes, "\(value)")
            #expect(value.isSensitive == (value.attributes[Sensitivity.self] == .sensitive), "\(value)")
        }
        #expect(values.filter(\.isSensitive).count == 6)
    }
}
