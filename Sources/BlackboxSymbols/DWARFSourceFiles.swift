/// The source files an ELF file's DWARF line tables name (`.debug_line`, versions 2 to 5), as
/// absolute paths: what a source bundle for its build-id should hold (`blackbox symbols upload
/// --sources`). Hand-written because no maintained Swift package reads DWARF, and only the line
/// tables' headers are needed: their directory and file tables, never the line programs.
///
/// Every read is bounded and checked against the section: a malformed or hostile file yields the
/// names read before the damage, never a trap.
public enum DWARFSourceFiles {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notELF
        case noLineTables
        /// SHF_COMPRESSED sections (`--compress-debug-sections`): not read.
        case compressed

        public var description: String {
            switch self {
            case .notELF: "not a 64-bit little-endian ELF file"
            case .noLineTables: "no DWARF line tables (.debug_line)"
            case .compressed: "its debug sections are compressed (--compress-debug-sections), which is not read"
            }
        }
    }

    /// Line tables are read up to this size (a large Swift binary's is tens of MiB).
    static let maxSectionBytes = 512 << 20

    /// Sorted, without duplicates. Relative names that no directory makes absolute are left out.
    public static func read(path: String) throws(Failure) -> [String] {
        guard let file = ELFFile(path: path) else { throw .notELF }
        let sections = file.namedSections()
        guard let lines = sections[".debug_line"], lines.type != 8, lines.size > 0 else { throw .noLineTables }
        let compressed: UInt64 = 0x800
        guard lines.flags & compressed == 0, (sections[".debug_line_str"]?.flags ?? 0) & compressed == 0 else {
            throw .compressed
        }
        guard let table = file.bytes(at: lines.offset, count: Int(clamping: lines.size), limit: maxSectionBytes)
        else { throw .noLineTables }
        let strings = sections[".debug_line_str"].flatMap {
            file.bytes(at: $0.offset, count: Int(clamping: $0.size), limit: maxSectionBytes)
        }
        let debugStrings = sections[".debug_str"].flatMap {
            file.bytes(at: $0.offset, count: Int(clamping: $0.size), limit: maxSectionBytes)
        }
        // DWARF 4 and older line tables leave the compilation directory to the unit's DIE.
        var compilationDirectories: [Int: String] = [:]
        if let info = sections[".debug_info"], let abbreviations = sections[".debug_abbrev"],
            info.flags & compressed == 0,
            let infoBytes = file.bytes(at: info.offset, count: Int(clamping: info.size), limit: maxSectionBytes),
            let abbreviationBytes = file.bytes(
                at: abbreviations.offset, count: Int(clamping: abbreviations.size), limit: maxSectionBytes)
        {
            compilationDirectories = Self.compilationDirectories(
                info: infoBytes, abbreviations: abbreviationBytes, strings: debugStrings ?? [],
                lineStrings: strings ?? [])
        }
        return names(
            lineTable: table, lineStrings: strings ?? [], strings: debugStrings ?? [],
            compilationDirectories: compilationDirectories)
    }

    /// The names of every unit's file table in `.debug_line`'s bytes; `compilationDirectories` by
    /// the offset of the unit's line table.
    static func names(
        lineTable: [UInt8], lineStrings: [UInt8], strings: [UInt8], compilationDirectories: [Int: String] = [:]
    ) -> [String] {
        var files = Set<String>()
        var unitStart = 0
        while unitStart + 4 <= lineTable.count {
            var reader = Reader(bytes: lineTable, offset: unitStart)
            guard var unit = try? reader.unitHeader() else { break }
            unit.compilationDirectory = compilationDirectories[unitStart]
            files.formUnion(
                (try? reader.fileNames(unit, lineStrings: lineStrings, strings: strings)) ?? [])
            guard unit.end > unitStart else { break }
            unitStart = unit.end
        }
        return files.sorted()
    }

    struct Unit {
        var version: Int
        var offsetSize: Int
        /// Where the next unit starts.
        var end: Int
        /// From the unit's DIE (`DW_AT_comp_dir`): what relative directories of DWARF 4 tables are in.
        var compilationDirectory: String? = nil
    }

    /// Each compilation unit's `DW_AT_comp_dir` by its `DW_AT_stmt_list` (the offset of its line
    /// table): the first DIE of each unit of `.debug_info`, read by its abbreviation. A unit with a
    /// form this does not know is passed over.
    static func compilationDirectories(info: [UInt8], abbreviations: [UInt8], strings: [UInt8], lineStrings: [UInt8])
        -> [Int: String]
    {
        var directories: [Int: String] = [:]
        var unitStart = 0
        while unitStart + 4 <= info.count {
            var reader = Reader(bytes: info, offset: unitStart)
            guard
                let (end, stmtList, directory) = try? reader.compilationUnit(
                    abbreviations: abbreviations, strings: strings, lineStrings: lineStrings)
            else { break }
            if let stmtList, let directory { directories[stmtList] = directory }
            guard end > unitStart else { break }
            unitStart = end
        }
        return directories
    }

    struct Malformed: Error {}

    /// A cursor over `.debug_line` that never reads past `limit` (the current unit's end).
    struct Reader {
        let bytes: [UInt8]
        var offset: Int
        var limit: Int

        init(bytes: [UInt8], offset: Int) {
            self.bytes = bytes
            self.offset = offset
            limit = bytes.count
        }

        mutating func byte() throws(Malformed) -> UInt8 {
            guard offset < limit else { throw Malformed() }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func integer(_ size: Int) throws(Malformed) -> UInt64 {
            guard size >= 0, size <= 8, limit - offset >= size else { throw Malformed() }
            var value: UInt64 = 0
            for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
            offset += size
            return value
        }

        mutating func skip(_ count: Int) throws(Malformed) {
            guard count >= 0, limit - offset >= count else { throw Malformed() }
            offset += count
        }

        mutating func uleb() throws(Malformed) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = try byte()
                if shift < 64 { value |= UInt64(byte & 0x7F) << shift }
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }

        mutating func cString() throws(Malformed) -> String {
            guard let end = bytes[offset..<limit].firstIndex(of: 0) else { throw Malformed() }
            defer { offset = end + 1 }
            return String(decoding: bytes[offset..<end], as: UTF8.self)
        }

        /// A unit's initial length (32-bit, or 64-bit after 0xffffffff), which also bounds what is read
        /// of the unit from here: where it ends, and the size of its section offsets.
        mutating func unitLength() throws(Malformed) -> (end: Int, offsetSize: Int) {
            var length = try integer(4)
            var offsetSize = 4
            if length == 0xFFFF_FFFF {
                length = try integer(8)
                offsetSize = 8
            }
            guard length <= UInt64(limit - offset) else { throw Malformed() }
            limit = offset + Int(length)
            return (limit, offsetSize)
        }

        /// Reads a unit's length and version and stops at its header's tables.
        mutating func unitHeader() throws(Malformed) -> Unit {
            let (end, offsetSize) = try unitLength()
            let version = Int(try integer(2))
            guard (2...5).contains(version) else { throw Malformed() }
            if version >= 5 { try skip(2) }  // address_size, segment_selector_size
            let headerLength = Int(clamping: try integer(offsetSize))
            guard headerLength <= limit - offset else { throw Malformed() }
            limit = offset + headerLength  // the tables end with the header
            try skip(version >= 4 ? 5 : 4)  // instruction length, (max ops), is_stmt, line_base, line_range
            let opcodeBase = Int(try byte())
            try skip(max(0, opcodeBase - 1))
            return Unit(version: version, offsetSize: offsetSize, end: end)
        }

        /// A `.debug_info` unit's header and first DIE: where the unit ends, its line table's offset
        /// and its compilation directory. Throws only where the unit's end cannot be known.
        mutating func compilationUnit(abbreviations: [UInt8], strings: [UInt8], lineStrings: [UInt8])
            throws(Malformed) -> (end: Int, stmtList: Int?, directory: String?)
        {
            let (end, offsetSize) = try unitLength()
            let version = Int(try integer(2))
            guard (2...5).contains(version) else { return (end, nil, nil) }
            let abbreviationOffset: UInt64
            let addressSize: Int
            if version >= 5 {
                let unitType = try byte()
                addressSize = Int(try byte())
                abbreviationOffset = try integer(offsetSize)
                // Skeleton and split units carry more header fields: their DIE is not read.
                guard unitType == 1 else { return (end, nil, nil) }  // DW_UT_compile
            } else {
                abbreviationOffset = try integer(offsetSize)
                addressSize = Int(try byte())
            }
            let code = try uleb()
            guard abbreviationOffset < UInt64(abbreviations.count),
                let attributes = Self.abbreviation(code, in: abbreviations, at: Int(abbreviationOffset))
            else { return (end, nil, nil) }
            var stmtList: Int?
            var directory: String?
            for (name, form) in attributes {
                guard
                    let value = try? dieAttribute(
                        form: form, version: version, offsetSize: offsetSize, addressSize: addressSize,
                        strings: strings, lineStrings: lineStrings)
                else { return (end, stmtList, directory) }
                if name == 0x10 { stmtList = value.number.map { Int(clamping: $0) } }  // DW_AT_stmt_list
                if name == 0x1B { directory = value.text }  // DW_AT_comp_dir
            }
            return (end, stmtList, directory)
        }

        /// The attributes (name, form) of abbreviation `code` in the table at `start`.
        static func abbreviation(_ code: UInt64, in table: [UInt8], at start: Int) -> [(UInt64, UInt64)]? {
            var reader = Reader(bytes: table, offset: start)
            while true {
                guard let found = try? reader.uleb(), found != 0, (try? reader.uleb()) != nil,
                    (try? reader.byte()) != nil
                else { return nil }
                var attributes: [(UInt64, UInt64)] = []
                while true {
                    guard let name = try? reader.uleb(), let form = try? reader.uleb() else { return nil }
                    if name == 0 && form == 0 { break }
                    if form == 0x21 { _ = try? reader.uleb() }  // implicit_const's value (a signed LEB)
                    attributes.append((name, form))
                }
                if found == code { return attributes }
            }
        }

        /// A DIE attribute's value: what `attribute` reads, and the other forms' sizes, skipped.
        mutating func dieAttribute(
            form: UInt64, version: Int, offsetSize: Int, addressSize: Int, strings: [UInt8], lineStrings: [UInt8]
        ) throws(Malformed) -> (text: String?, number: UInt64?) {
            switch form {
            case 0x01: return (nil, try integer(addressSize))  // addr
            case 0x03: try skip(Int(try integer(2)))  // block2
            case 0x04: try skip(Int(clamping: try integer(4)))  // block4
            case 0x0A: try skip(Int(try integer(1)))  // block1
            case 0x0C, 0x11, 0x25, 0x29: try skip(1)  // flag, ref1, strx1, addrx1
            case 0x12, 0x26, 0x2A: try skip(2)  // ref2, strx2, addrx2
            case 0x27, 0x2B: try skip(3)  // strx3, addrx3
            case 0x13, 0x28, 0x2C, 0x1C: try skip(4)  // ref4, strx4, addrx4, ref_sup4
            case 0x14, 0x20, 0x24: try skip(8)  // ref8, ref_sig8, ref_sup8
            case 0x0D, 0x15, 0x1A, 0x1B, 0x22, 0x23: _ = try uleb()  // sdata, ref_udata, strx, addrx, …x
            case 0x10: try skip(version <= 2 ? addressSize : offsetSize)  // ref_addr
            case 0x17: return (nil, try integer(offsetSize))  // sec_offset
            case 0x1D: try skip(offsetSize)  // strp_sup
            case 0x18: try skip(Int(clamping: try uleb()))  // exprloc
            case 0x19, 0x21: break  // flag_present, implicit_const: nothing in the DIE
            case 0x16:  // indirect: the form comes first (once: a chain of them is no attribute)
                let form = try uleb()
                guard form != 0x16 else { throw Malformed() }
                return try dieAttribute(
                    form: form, version: version, offsetSize: offsetSize, addressSize: addressSize,
                    strings: strings, lineStrings: lineStrings)
            default:
                return try attribute(
                    form: form, unit: Unit(version: version, offsetSize: offsetSize, end: limit),
                    lineStrings: lineStrings, strings: strings)
            }
            return (nil, nil)
        }

        mutating func fileNames(_ unit: Unit, lineStrings: [UInt8], strings: [UInt8]) throws(Malformed) -> [String] {
            if unit.version >= 5 {
                let directories = try entries(unit, lineStrings: lineStrings, strings: strings)
                let files = try entries(unit, lineStrings: lineStrings, strings: strings)
                // Entry 0 is the compilation directory; the others may be relative to it.
                let compilation = directories.first?.path
                return files.compactMap { file in
                    guard let name = file.path else { return nil }
                    let directory =
                        directories.indices.contains(file.directory) ? directories[file.directory].path : nil
                    return Self.absolute(name, in: directory.map { Self.absolute($0, in: compilation) ?? $0 })
                }
            }
            // Relative directories, and index 0, are in the compilation directory.
            let compilation = unit.compilationDirectory
            var directories: [String] = []
            while true {
                let directory = try cString()
                if directory.isEmpty { break }
                directories.append(Self.absolute(directory, in: compilation) ?? directory)
            }
            var names: [String] = []
            while true {
                let name = try cString()
                if name.isEmpty { break }
                let index = Int(clamping: try uleb())
                _ = try uleb()  // modification time
                _ = try uleb()  // length
                let directory = index >= 1 && index <= directories.count ? directories[index - 1] : compilation
                if let path = Self.absolute(name, in: directory) { names.append(path) }
            }
            return names
        }

        struct Entry {
            var path: String?
            var directory = 0
        }

        /// A DWARF 5 directory or file table: its entry format, then its entries.
        mutating func entries(_ unit: Unit, lineStrings: [UInt8], strings: [UInt8]) throws(Malformed) -> [Entry] {
            let formatCount = Int(try byte())
            var format: [(content: UInt64, form: UInt64)] = []
            for _ in 0..<formatCount { format.append((try uleb(), try uleb())) }
            let count = try uleb()
            // Each entry takes at least a byte (an empty format describes nothing): a count past the
            // header's end is a lie, and no table names a million files.
            guard count <= UInt64(limit - offset), count <= 1_000_000, count == 0 || formatCount > 0 else {
                throw Malformed()
            }
            var entries: [Entry] = []
            for _ in 0..<count {
                var entry = Entry()
                for (content, form) in format {
                    let value = try attribute(form: form, unit: unit, lineStrings: lineStrings, strings: strings)
                    switch content {
                    case 1: entry.path = value.text  // DW_LNCT_path
                    case 2: entry.directory = Int(clamping: value.number ?? 0)  // DW_LNCT_directory_index
                    default: break
                    }
                }
                entries.append(entry)
            }
            return entries
        }

        mutating func attribute(form: UInt64, unit: Unit, lineStrings: [UInt8], strings: [UInt8]) throws(Malformed)
            -> (text: String?, number: UInt64?)
        {
            switch form {
            case 0x08: return (try cString(), nil)  // DW_FORM_string
            case 0x1F: return (Self.string(at: try integer(unit.offsetSize), in: lineStrings), nil)  // line_strp
            case 0x0E: return (Self.string(at: try integer(unit.offsetSize), in: strings), nil)  // strp
            case 0x0B: return (nil, try integer(1))  // data1
            case 0x05: return (nil, try integer(2))  // data2
            case 0x06: return (nil, try integer(4))  // data4
            case 0x07: return (nil, try integer(8))  // data8
            case 0x0F: return (nil, try uleb())  // udata
            case 0x1E:  // data16 (an MD5)
                try skip(16)
                return (nil, nil)
            case 0x09:  // block
                try skip(Int(clamping: try uleb()))
                return (nil, nil)
            default: throw Malformed()  // a form a line table does not use: the rest cannot be read
            }
        }

        static func string(at offset: UInt64, in section: [UInt8]) -> String? {
            guard offset < UInt64(section.count) else { return nil }
            let start = Int(offset)
            guard let end = section[start...].firstIndex(of: 0) else { return nil }
            return String(decoding: section[start..<end], as: UTF8.self)
        }

        /// `name` made absolute by `directory`; nil when neither is absolute.
        static func absolute(_ name: String, in directory: String?) -> String? {
            if name.hasPrefix("/") { return name }
            guard let directory, directory.hasPrefix("/") else { return nil }
            return directory.hasSuffix("/") ? directory + name : directory + "/" + name
        }
    }
}
