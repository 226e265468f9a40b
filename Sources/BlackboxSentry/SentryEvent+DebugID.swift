import BlackboxFormat

extension SentryEvent.Image {
    /// The debug id Sentry derives from an ELF build-id (what `sentry-cli debug-files check` prints):
    /// its first 16 bytes (zero-padded) as a GUID whose first three fields are little-endian, so the
    /// first 4, next 2 and next 2 bytes are reversed. Nil unless the build-id is 2 to 64 bytes of
    /// lowercase hex, as `readelf -n` prints it.
    public static func debugID(ofBuildID buildID: String) -> String? {
        guard isBuildIDHex(buildID) else { return nil }
        var bytes: [UInt8] = []
        var index = buildID.startIndex
        while bytes.count < 16, index < buildID.endIndex {
            let next = buildID.index(index, offsetBy: 2)
            bytes.append(UInt8(buildID[index..<next], radix: 16) ?? 0)
            index = next
        }
        bytes += [UInt8](repeating: 0, count: 16 - bytes.count)
        let swapped = Array(bytes[0..<4].reversed() + bytes[4..<6].reversed() + bytes[6..<8].reversed() + bytes[8...])
        let hex = Array(swapped.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }
        return parts.joined(separator: "-")
    }
}
