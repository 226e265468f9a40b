import BlackboxFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Reads NT_GNU_BUILD_ID from an ELF file on disk (64-bit little-endian: x86_64 and aarch64 Linux),
/// to check that the binary we are about to symbolicate with is the one that crashed.
enum ELFBuildID {
    static func read(path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func bytes(at offset: UInt64, count: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20 else { return nil }
            var buffer = [UInt8](repeating: 0, count: count)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? buffer : nil
        }
        guard let header = bytes(at: 0, count: 64), header[0..<4] == [0x7F, 0x45, 0x4C, 0x46],
            header[4] == 2, header[5] == 1
        else { return nil }
        let programHeaders = header.le(UInt64.self, at: 32)
        let entrySize = Int(header.le(UInt16.self, at: 54))
        let entryCount = Int(header.le(UInt16.self, at: 56))
        guard entrySize >= 56, entryCount < 4096,
            let table = bytes(at: programHeaders, count: entrySize * entryCount)
        else { return nil }
        for index in 0..<entryCount {
            let entry = index * entrySize
            guard table.le(UInt32.self, at: entry) == 4 else { continue }  // PT_NOTE
            let offset = table.le(UInt64.self, at: entry + 8)
            let size = Int(table.le(UInt64.self, at: entry + 32))
            guard let notes = bytes(at: offset, count: size) else { continue }
            if let id = buildID(inNotes: notes) { return id }
        }
        return nil
    }

    static func buildID(inNotes notes: [UInt8]) -> String? {
        var cursor = 0
        while cursor + 12 <= notes.count {
            let nameSize = Int(notes.le(UInt32.self, at: cursor))
            let descriptorSize = Int(notes.le(UInt32.self, at: cursor + 4))
            let type = notes.le(UInt32.self, at: cursor + 8)
            let name = cursor + 12
            let descriptor = name + ((nameSize + 3) & ~3)
            guard descriptor + descriptorSize <= notes.count else { return nil }
            if type == 3, nameSize == 4, notes[name..<name + 4] == [0x47, 0x4E, 0x55, 0] {
                return lowercaseHex(notes[descriptor..<descriptor + descriptorSize])
            }
            cursor = descriptor + ((descriptorSize + 3) & ~3)
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    /// A little-endian integer at `offset` (the caller checked the bounds).
    fileprivate func le<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(self[offset + index]) }
        return value
    }
}
