/// What an ELF file offers for symbolication: its build-id and whether it carries DWARF debug info
/// (function names with file:line and inlined frames), a symbol table (function names only), or
/// code (a loadable binary, what debuginfod calls the executable). Used to archive symbols
/// (`blackbox symbols upload`) and to check what is uploaded (the collector's symbol store).
public struct ELFSymbolFile: Sendable, Equatable {
    public var buildID: String?
    public var hasDebugInfo: Bool
    public var hasSymbolTable: Bool
    public var hasCode: Bool
    /// `x86_64` or `aarch64` (the ELF header's machine; nil for another).
    public var architecture: String?

    /// Nil when the file is not a 64-bit little-endian ELF file.
    public init?(path: String) {
        guard let file = ELFFile(path: path) else { return nil }
        let sections = file.namedSections()
        // SHT_NOBITS (8): a section kept only by name, as `--only-keep-debug` leaves `.text` and
        // `strip` would leave nothing.
        func present(_ name: String) -> Bool {
            guard let section = sections[name] else { return false }
            return section.type != 8 && section.size > 0
        }
        buildID = ELFBuildID.read(from: file)
        hasDebugInfo = present(".debug_info")
        hasSymbolTable = present(".symtab")
        hasCode = present(".text")
        architecture =
            switch file.header.le(UInt16.self, at: 18) {
            case 62: "x86_64"
            case 183: "aarch64"
            default: nil
            }
    }
}
