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
