import BlackboxFormat

extension SentryEvent.Image {
    /// The debug id Sentry derives from an ELF build-id (what `sentry-cli debug-files check` prints):
    /// its first 16 bytes (zero-padded) as a GUID whose first three fields are little-endian, so the
    /// first 4, next 2 and next 2 bytes are reversed. Nil unless the build-id is 2 to 64 bytes of
    /// lowercase hex, as `readelf -n` prints it.
    public static func debugID(ofBuildID buildID: String) -> String? {
        guard isBuildIDHex(buildID), let digits = BlackboxFormat.bytes(fromHex: buildID) else { return nil }
        let bytes = Array(digits.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - digits.count))
        let swapped = Array(bytes[0..<4].reversed() + bytes[4..<6].reversed() + bytes[6..<8].reversed() + bytes[8...])
        let hex = Array(lowercaseHex(swapped))
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }
        return parts.joined(separator: "-")
    }
}
