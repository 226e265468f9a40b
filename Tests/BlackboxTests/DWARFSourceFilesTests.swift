import Testing

@testable import BlackboxSymbols

/// The line-table reader on tables built byte by byte: DWARF 5's entry formats, DWARF 4's
/// directories relative to the unit's compilation directory, and tables that lie about their sizes.
/// (`SourceBundleTests` compares it with sentry-cli on real binaries.)
@Suite("DWARF line tables: the files they name")
struct DWARFSourceFilesTests {
    /// A unit of `.debug_line` around `tables` (what follows the standard opcode lengths).
    static func unit(version: UInt16, tables: [UInt8]) -> [UInt8] {
        var header: [UInt8] = [1]  // minimum instruction length
        if version >= 4 { header.append(1) }  // maximum operations per instruction
        header += [1, 0xFB, 14, 13] + [UInt8](repeating: 0, count: 12) + tables
        var afterLength = withUnsafeBytes(of: version.littleEndian, Array.init)
        if version >= 5 { afterLength += [8, 0] }  // address size, segment selector size
        afterLength += withUnsafeBytes(of: UInt32(header.count).littleEndian, Array.init) + header
        return withUnsafeBytes(of: UInt32(afterLength.count).littleEndian, Array.init) + afterLength
    }

    static func string(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }

    @Test("DWARF 5: paths and directory indexes by their forms; relative directories within the first")
    func dwarf5() {
        let tables: [UInt8] =
            [1, 0x01, 0x08, 2] + Self.string("/src") + Self.string("sub")  // directories: path as a string
            + [2, 0x01, 0x08, 0x02, 0x0B, 2]  // files: path as a string, directory index as data1
            + Self.string("a.swift") + [0] + Self.string("b.swift") + [1]
        #expect(
            DWARFSourceFiles.names(lineTable: Self.unit(version: 5, tables: tables), lineStrings: [], strings: [])
                == ["/src/a.swift", "/src/sub/b.swift"])
        // A second unit after it is read too; one that lies about its file count ends the reading there.
        let lying: [UInt8] = [1, 0x01, 0x08, 1] + Self.string("/x") + [0, 0xC0, 0x84, 0x3D]  // no format, 10^6 files
        #expect(
            DWARFSourceFiles.names(
                lineTable: Self.unit(version: 5, tables: tables) + Self.unit(version: 5, tables: lying),
                lineStrings: [], strings: []) == ["/src/a.swift", "/src/sub/b.swift"])
    }

    @Test("DWARF 4: directory 0 and relative directories are the unit's compilation directory's")
    func dwarf4() {
        let tables: [UInt8] =
            Self.string("Sources/App") + Self.string("/abs") + [0]
            + Self.string("main.swift") + [1, 0, 0] + Self.string("lib.c") + [2, 0, 0]
            + Self.string("gen.swift") + [0, 0, 0] + [0]
        let table = Self.unit(version: 4, tables: tables)
        #expect(
            DWARFSourceFiles.names(lineTable: table, lineStrings: [], strings: [], compilationDirectories: [0: "/work"])
                == ["/abs/lib.c", "/work/Sources/App/main.swift", "/work/gen.swift"])
        // Without the compilation directory, only what is absolute on its own.
        #expect(DWARFSourceFiles.names(lineTable: table, lineStrings: [], strings: []) == ["/abs/lib.c"])
    }

    @Test("a compilation unit's DIE: stmt_list and comp_dir read past other forms; a chain of indirect forms refused")
    func compilationDirectories() {
        // Abbreviation 1: DW_TAG_compile_unit, no children; producer (strp), name (string),
        // comp_dir (string), stmt_list (sec_offset).
        let abbreviations: [UInt8] = [1, 0x11, 0, 0x25, 0x0E, 0x03, 0x08, 0x1B, 0x08, 0x10, 0x17, 0, 0, 0]
        func unit(_ die: [UInt8]) -> [UInt8] {
            let body: [UInt8] = [4, 0] + [0, 0, 0, 0] + [8] + die  // version 4, abbreviation offset 0, address size
            return withUnsafeBytes(of: UInt32(body.count).littleEndian, Array.init) + body
        }
        let die: [UInt8] = [1, 0, 0, 0, 0] + Self.string("main.swift") + Self.string("/work") + [0x40, 0, 0, 0]
        #expect(
            DWARFSourceFiles.compilationDirectories(
                info: unit(die), abbreviations: abbreviations, strings: [0], lineStrings: []) == [0x40: "/work"])
        // The same through DW_FORM_indirect once, and refused (no directory) through a chain of them.
        let indirect: [UInt8] = [1, 0x11, 0, 0x1B, 0x16, 0x10, 0x17, 0, 0, 0]
        #expect(
            DWARFSourceFiles.compilationDirectories(
                info: unit([1, 0x08] + Self.string("/once") + [0x10, 0, 0, 0]), abbreviations: indirect, strings: [],
                lineStrings: []) == [0x10: "/once"])
        let chain = [UInt8](repeating: 0x16, count: 10_000)
        #expect(
            DWARFSourceFiles.compilationDirectories(
                info: unit([1] + chain + [0x08] + Self.string("/deep") + [0x10, 0, 0, 0]), abbreviations: indirect,
                strings: [], lineStrings: []
            ).isEmpty)
    }
}
