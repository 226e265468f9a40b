import Logging

/// Reads a metadata value's attributes without `MetadataValue.attributes`' dynamic cast.
///
/// swift-log keeps a value's attributes in an internal struct (`AttributedStringCarrier`: the value's
/// string, then its `MetadataValueAttributes`) boxed as `any CustomStringConvertible & Sendable`, and
/// its getter finds the struct with `as?`: ~75 ns a value on this project's machines, most of what a
/// private value cost its caller (issue 52's bar is 10 % of a ~900 ns call). Here the box's dynamic
/// type is compared with the carrier's, taken once from a value swift-log made, and the attributes
/// are read where the carrier keeps them. That layout is swift-log's, not an API: it is checked once
/// on values made for the purpose (the size, the string's bytes first, the attributes read back equal
/// to those given), and if it is not the one expected, every read goes through the getter.
enum AttributeCarrier {
    /// The carrier's type and its attributes' offset, or nil when the layout was not recognized.
    static let recognized: (type: Any.Type, attributesOffset: Int)? = recognize()

    static func attributes(of value: Logger.MetadataValue) -> Logger.MetadataValueAttributes {
        guard case .stringConvertible(let box) = value else { return Logger.MetadataValueAttributes() }
        guard let carrier = recognized else { return value.attributes }
        guard type(of: box) == carrier.type else { return Logger.MetadataValueAttributes() }
        return read(box, at: carrier.attributesOffset)
    }

    /// `box` opened: its bytes are the carrier's own (no existential container in between).
    private static func read(_ box: some CustomStringConvertible & Sendable, at offset: Int)
        -> Logger.MetadataValueAttributes
    {
        withUnsafeBytes(of: box) { $0.load(fromByteOffset: offset, as: Logger.MetadataValueAttributes.self) }
    }

    private static func recognize() -> (type: Any.Type, attributesOffset: Int)? {
        var one = Logger.MetadataValueAttributes()
        one[Sensitivity.self] = .sensitive
        var two = one
        two[Probe.self] = .other  // a second attribute: swift-log keeps it apart from the first
        var carrierType: Any.Type?
        for attributes in [Logger.MetadataValueAttributes(), one, two] {
            let value = Logger.MetadataValue.attributed("probe", attributes: attributes)
            guard case .stringConvertible(let box) = value, carrierType == nil || type(of: box) == carrierType,
                Self.hasExpectedLayout(box, string: "probe", attributes: attributes)
            else { return nil }
            carrierType = type(of: box)
        }
        return carrierType.map { ($0, MemoryLayout<String>.size) }
    }

    /// The string's 16 bytes first, then exactly the attributes, which read back equal to `attributes`.
    /// The bytes are compared before anything is read as a typed value: a different layout is refused
    /// without reading references where there are none.
    private static func hasExpectedLayout<Carrier: CustomStringConvertible & Sendable>(
        _ carrier: Carrier, string: String, attributes: Logger.MetadataValueAttributes
    ) -> Bool {
        let offset = MemoryLayout<String>.size
        guard MemoryLayout<Carrier>.size == offset + MemoryLayout<Logger.MetadataValueAttributes>.size,
            MemoryLayout<Carrier>.alignment >= MemoryLayout<Logger.MetadataValueAttributes>.alignment
        else { return false }
        let stringFirst = withUnsafeBytes(of: carrier) { carrierBytes in
            withUnsafeBytes(of: string) { carrierBytes.prefix(offset).elementsEqual($0) }
        }
        return stringFirst && read(carrier, at: offset) == attributes
    }

    /// An attribute of the probe's own, so that a carrier with two attributes is checked as well.
    private enum Probe: Int64, Logger.MetadataValueAttributes.Attribute {
        case other = 7
    }
}
