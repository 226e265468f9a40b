import BlackboxFormat

#if canImport(Glibc)
    import Glibc
#endif

/// Reads NT_GNU_BUILD_ID from an ELF file on disk,
/// to check that the binary we are about to symbolicate with is the one that crashed.
enum ELFBuildID {
    static func read(path: String) -> String? {
        guard let file = ELFFile(path: path) else { return nil }
        let header = file.header
        let entrySize = Int(header.le(UInt16.self, at: 54))
        let entryCount = Int(header.le(UInt16.self, at: 56))
        guard
            let table = file.table(
                at: header.le(UInt64.self, at: 32), entrySize: entrySize, count: entryCount, minimumSize: 56)
        else { return nil }
        for index in 0..<entryCount {
            let entry = index * entrySize
            guard table.le(UInt32.self, at: entry) == 4 else { continue }  // PT_NOTE
            let offset = table.le(UInt64.self, at: entry + 8)
            let size = Int(clamping: table.le(UInt64.self, at: entry + 32))
            guard let notes = file.bytes(at: offset, count: size) else { continue }
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
