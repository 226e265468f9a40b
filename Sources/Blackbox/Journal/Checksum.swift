/// The record checksum: a 32-bit fold of a two-lane multiply-xor hash.
///
/// Hand-written because it sits on every log call: it must cost a few nanoseconds for a 100-byte
/// record, and there is no SIMD CRC32C reachable from Swift without C. It only has to catch torn and
/// corrupted records, not resist an adversary. The seed mixes in the record's position and length, so a
/// record copied to another place in the ring does not verify.
@inlinable
func journalChecksum(_ bytes: UnsafeRawPointer, count: Int, seed: UInt64) -> UInt32 {
    let k0: UInt64 = 0x9E37_79B9_7F4A_7C15
    let k1: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    var a = seed ^ k1
    var b = UInt64(truncatingIfNeeded: count) ^ k0
    var i = 0
    while i + 16 <= count {
        a = (a ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* k0
        b = (b ^ bytes.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self)) &* k1
        a ^= a >> 29
        b ^= b >> 31
        i += 16
    }
    var tail: UInt64 = 0
    var shift: UInt64 = 0
    while i < count {
        tail |= UInt64(bytes.load(fromByteOffset: i, as: UInt8.self)) << shift
        shift += 8
        if shift == 64 {
            a = (a ^ tail) &* k0
            a ^= a >> 29
            tail = 0
            shift = 0
        }
        i += 1
    }
    var h = (a ^ (b &* k0) ^ tail) &* k1
    h ^= h >> 32
    h = h &* k0
    h ^= h >> 29
    return UInt32(truncatingIfNeeded: h)
}
