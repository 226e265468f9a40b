/// Bytes as lowercase hex, two digits each: how build-ids (as `readelf -n` prints them) and sha256
/// digests appear everywhere in the report and bundle formats.
public func lowercaseHex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 15)])
    }
    return String(decoding: text, as: UTF8.self)
}

/// An address or offset as the report formats write it: `0x` and lowercase hex digits.
package func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

/// The address or offset `hex(_:)` wrote: `0x` and 1 to 16 hex digits; nil for anything else.
package func address(fromHex text: some StringProtocol) -> UInt64? {
    guard text.hasPrefix("0x"), (3...18).contains(text.utf8.count) else { return nil }
    return UInt64(text.dropFirst(2), radix: 16)
}

/// Whether `text` is a build-id as `readelf -n` prints it: 2 to 64 bytes of lowercase hex.
public func isBuildIDHex(_ text: String) -> Bool {
    (4...128).contains(text.utf8.count) && text.utf8.count.isMultiple(of: 2)
        && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}

/// The bytes `lowercaseHex` wrote (upper-case digits read too); nil for an odd length or another character.
public func bytes(fromHex text: some StringProtocol) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count.isMultiple(of: 2) else { return nil }
    func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
    }
    return bytes
}
