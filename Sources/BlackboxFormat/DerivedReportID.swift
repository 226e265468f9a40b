#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension UUID {
    /// The same id for the same raw report, however often it is processed: a start that dies between
    /// writing the report to the outbox and removing the raw file processes it again at the next
    /// start, and must overwrite its first report instead of adding a second. Two FNV-1a passes with
    /// different offsets (not cryptographic: the raw file is the app's own), shaped as a version-8 UUID.
    package init(derivedFrom bytes: [UInt8]) {
        func fnv1a(_ offset: UInt64) -> UInt64 {
            bytes.reduce(offset) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
        }
        let high = fnv1a(0xCBF2_9CE4_8422_2325)
        let low = fnv1a(0x84222325_CBF29CE4) ^ UInt64(bytes.count)
        var raw =
            (0..<8).map { UInt8(truncatingIfNeeded: high >> (8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (8 * $0)) }
        raw[6] = (raw[6] & 0x0F) | 0x80  // version 8: custom
        raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
        self.init(
            uuid: (
                raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11],
                raw[12], raw[13], raw[14], raw[15]
            ))
    }
}
