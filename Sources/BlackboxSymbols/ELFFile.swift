#if canImport(Glibc)
    import Glibc
#endif

/// Bounded reads from an ELF file on disk: 64-bit little-endian only (x86_64 and aarch64 Linux).
/// Hand-written because no maintained Swift package reads ELF; we need its header, notes and symbol
/// tables, nothing more. The file may be anything (a replaced binary, a truncated copy): every read
/// is bounded and checked, and a malformed file yields nil, never a trap.
package struct ELFFile: ~Copyable {
    private let descriptor: Int32
    /// The first 64 bytes: the ELF header.
    package let header: [UInt8]
    /// The file's size: no read is attempted (or memory taken for it) past the end.
    package let size: UInt64

    package init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var header = [UInt8](repeating: 0, count: 64)
        let read = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 64, 0) }
        guard read == 64, header[0..<4] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1 else {
            close(fd)
            return nil
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            close(fd)
            return nil
        }
        descriptor = fd
        self.header = header
        size = UInt64(status.st_size)
    }

    deinit { close(descriptor) }

    /// `count` bytes at `offset`, or nil when the file is shorter or `count` exceeds `limit`.
    package func bytes(at offset: UInt64, count: Int, limit: Int = 1 << 20) -> [UInt8]? {
        guard count > 0, count <= limit, offset < size, UInt64(count) <= size - offset else { return nil }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
        return read == count ? buffer : nil
    }

    /// The table of `count` entries of at least `minimumSize` bytes each at `offset`.
    package func table(at offset: UInt64, entrySize: Int, count: Int, minimumSize: Int) -> [UInt8]? {
        guard entrySize >= minimumSize, count > 0, count < 65_536 else { return nil }
        return bytes(at: offset, count: entrySize * count)
    }

    package struct Section {
        /// Offset of the name in the section-name string table (`.shstrtab`).
        package var nameOffset: UInt32
        package var type: UInt32
        /// SHF_COMPRESSED (0x800) among them: the section's bytes are a compression header and zlib data.
        package var flags: UInt64
        package var offset: UInt64
        package var size: UInt64
        package var link: UInt32
        package var entrySize: UInt64
    }

    /// The section headers; empty when the file has none readable.
    package func sections() -> [Section] {
        let entrySize = Int(header.le(UInt16.self, at: 58))
        let count = Int(header.le(UInt16.self, at: 60))
        guard let table = table(at: header.le(UInt64.self, at: 40), entrySize: entrySize, count: count, minimumSize: 64)
        else { return [] }
        return (0..<count).map { index in
            let entry = index * entrySize
            return Section(
                nameOffset: table.le(UInt32.self, at: entry), type: table.le(UInt32.self, at: entry + 4),
                flags: table.le(UInt64.self, at: entry + 8), offset: table.le(UInt64.self, at: entry + 24),
                size: table.le(UInt64.self, at: entry + 32), link: table.le(UInt32.self, at: entry + 40),
                entrySize: table.le(UInt64.self, at: entry + 56))
        }
    }

    /// The sections by name (the first of each name), from the section-name string table.
    package func namedSections() -> [String: Section] {
        let sections = sections()
        let namesIndex = Int(header.le(UInt16.self, at: 62))
        guard namesIndex < sections.count,
            let names = bytes(at: sections[namesIndex].offset, count: Int(clamping: sections[namesIndex].size))
        else { return [:] }
        var named: [String: Section] = [:]
        for section in sections where Int(section.nameOffset) < names.count {
            let start = Int(section.nameOffset)
            let end = names[start...].firstIndex(of: 0) ?? names.count
            let name = String(decoding: names[start..<end], as: UTF8.self)
            if named[name] == nil { named[name] = section }
        }
        return named
    }
}

extension Array where Element == UInt8 {
    /// A little-endian integer at `offset` (the caller checked the bounds).
    package func le<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in (0..<MemoryLayout<T>.size).reversed() { value = value << 8 | T(self[offset + index]) }
        return value
    }
}
