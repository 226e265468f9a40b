/// The record checksum: a Fletcher-style pair of 64-bit word sums, mixed and folded to 32 bits.
///
/// Hand-written because it runs on every log call: two additions per 8 bytes, a few nanoseconds for a
/// 150-byte record, where a table-driven CRC costs ~10x more and hardware CRC32C is not reachable
/// from Swift without C. It only has to catch torn and corrupted records, not resist an adversary; the
/// running sum of sums makes it sensitive to the order of words as well as their values. The seed
/// mixes in the record's position and length, so a record copied elsewhere in the ring fails.
///
/// `bytes` must be 8-byte aligned and readable up to `count` rounded up to 8 (journal records are
/// padded to 8, and the padding is the record's own): the last partial word is read whole and masked.
@inlinable
func journalChecksum(_ bytes: UnsafeRawPointer, count: Int, seed: UInt64) -> UInt32 {
    var a = seed ^ 0x9E37_79B9_7F4A_7C15
    var b = UInt64(truncatingIfNeeded: count)
    let words = count >> 3
    var i = 0
    while i + 2 <= words {
        a &+= bytes.load(fromByteOffset: i << 3, as: UInt64.self)
        b &+= a
        a &+= bytes.load(fromByteOffset: (i + 1) << 3, as: UInt64.self)
        b &+= a
        i += 2
    }
    if i < words {
        a &+= bytes.load(fromByteOffset: i << 3, as: UInt64.self)
        b &+= a
    }
    let rest = count & 7
    if rest > 0 {
        let mask: UInt64 = (1 << UInt64(rest * 8)) &- 1
        a &+= bytes.load(fromByteOffset: words << 3, as: UInt64.self) & mask
        b &+= a
    }
    var h = (a ^ ((b << 32) | (b >> 32))) &* 0xC2B2_AE3D_27D4_EB4F
    h ^= h >> 29
    h = h &* 0x9E37_79B9_7F4A_7C15
    h ^= h >> 32
    return UInt32(truncatingIfNeeded: h)
}

/// Copies a short run of bytes without a call to memmove: log records are built from many short
/// pieces, where the call costs more than the copy. Longer runs use memmove.
@inlinable
@inline(__always)
func copyBytes(to destination: UnsafeMutableRawPointer, from source: UnsafeRawPointer, count n: Int) {
    if n > 32 {
        destination.copyMemory(from: source, byteCount: n)
    } else if n > 16 {
        let a = source.loadUnaligned(as: UInt64.self)
        let b = source.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        let c = source.loadUnaligned(fromByteOffset: n - 16, as: UInt64.self)
        let d = source.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        destination.storeBytes(of: a, as: UInt64.self)
        destination.storeBytes(of: b, toByteOffset: 8, as: UInt64.self)
        destination.storeBytes(of: c, toByteOffset: n - 16, as: UInt64.self)
        destination.storeBytes(of: d, toByteOffset: n - 8, as: UInt64.self)
    } else if n >= 8 {
        let head = source.loadUnaligned(as: UInt64.self)
        let tail = source.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        destination.storeBytes(of: head, as: UInt64.self)
        destination.storeBytes(of: tail, toByteOffset: n - 8, as: UInt64.self)
    } else if n >= 4 {
        let head = source.loadUnaligned(as: UInt32.self)
        let tail = source.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
        destination.storeBytes(of: head, as: UInt32.self)
        destination.storeBytes(of: tail, toByteOffset: n - 4, as: UInt32.self)
    } else {
        for i in 0..<n {
            destination.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
        }
    }
}
