import BlackboxFormat

/// Function names from an image's own ELF symbol table (`.symtab`, else `.dynsym`): what a release
/// binary stripped of its debug info still carries, and all there is where no symbolizer is
/// installed (a slim runtime image). No file:line and no inlined frames: those need debug info.
package struct ELFSymbolTable {
    private struct Function {
        var start: UInt64
        var size: UInt64
        var nameOffset: Int
    }

    /// Sorted by start address.
    private let functions: [Function]
    private let names: [UInt8]

    /// Larger tables are not read: a symbol table this big is not a real binary's (the Swift
    /// toolchain's largest library has about 40 MB).
    static let maximumTableBytes = 512 << 20

    /// Nil when the file is not ELF or has no symbol table with functions.
    package init?(path: String) {
        guard let file = ELFFile(path: path) else { return nil }
        let sections = file.sections()
        for type: UInt32 in [2, 11] {  // SHT_SYMTAB, else SHT_DYNSYM
            guard let table = sections.first(where: { $0.type == type && $0.entrySize >= 24 }),
                Int(table.link) < sections.count
            else { continue }
            let strings = sections[Int(table.link)]
            guard
                let entries = file.bytes(
                    at: table.offset, count: Int(clamping: table.size), limit: Self.maximumTableBytes),
                let names = file.bytes(
                    at: strings.offset, count: Int(clamping: strings.size), limit: Self.maximumTableBytes)
            else { continue }
            let entrySize = Int(clamping: table.entrySize)
            var functions: [Function] = []
            for entry in stride(from: 0, to: entries.count - entrySize + 1, by: entrySize) {
                let type = entries[entry + 4] & 0xF
                let definedIn = entries.le(UInt16.self, at: entry + 6)
                let start = entries.le(UInt64.self, at: entry + 8)
                let nameOffset = Int(entries.le(UInt32.self, at: entry))
                // STT_FUNC or STT_GNU_IFUNC, defined in this file, with a name.
                guard type == 2 || type == 10, definedIn != 0, start != 0, nameOffset > 0, nameOffset < names.count
                else { continue }
                functions.append(
                    Function(start: start, size: entries.le(UInt64.self, at: entry + 16), nameOffset: nameOffset))
            }
            guard !functions.isEmpty else { continue }
            // Aliases share a start: the one with a size comes first and wins.
            self.functions = functions.sorted { ($0.start, $1.size) < ($1.start, $0.size) }
            self.names = names
            return
        }
        return nil
    }

    /// The function containing `offset` (a link-time virtual address: the frame's image offset),
    /// demangled when it is a Swift name.
    package func symbol(at offset: UInt64) -> CrashReport.Symbol? {
        // The last function starting at or before `offset`.
        var low = 0
        var high = functions.count
        while low < high {
            let middle = (low + high) / 2
            if functions[middle].start <= offset { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        var candidate = low - 1
        // Among functions starting at the same address, the first (sized) one.
        while candidate > 0 && functions[candidate - 1].start == functions[candidate].start { candidate -= 1 }
        let function = functions[candidate]
        guard function.size == 0 || offset < function.start &+ function.size else { return nil }
        let name = self.name(at: function.nameOffset)
        let demangled = SwiftDemangler.demangle(name)
        return CrashReport.Symbol(function: demangled ?? name, mangledName: demangled == nil ? nil : name)
    }

    private func name(at offset: Int) -> String {
        let end = names[offset...].firstIndex(of: 0) ?? names.endIndex
        return String(decoding: names[offset..<end], as: UTF8.self)
    }
}
