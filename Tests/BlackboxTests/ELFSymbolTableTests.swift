import BlackboxSymbols
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite("ELF symbol table: names without a symbolizer, and no trap on a malformed file")
struct ELFSymbolTableTests {
    var crashChild: String { "\(Build.debug.binDirectory ?? "")/blackbox-crash-child" }

    /// Function symbols as `nm` lists them: (address, size, name).
    func nmFunctions(_ path: String) throws -> [(UInt64, UInt64, String)] {
        let listing = try runProgram("/usr/bin/nm", ["--defined-only", "-S", path])
        return listing.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 3)
            guard fields.count == 4, fields[2] == "T" || fields[2] == "t",
                let address = UInt64(fields[0], radix: 16), let size = UInt64(fields[1], radix: 16), size > 4
            else { return nil }
            return (address, size, String(fields[3]))
        }
    }

    @Test("every sized function nm lists is found at its start, its middle and its last byte")
    func agreesWithNM() throws {
        let table = try #require(ELFSymbolTable(path: crashChild))
        let functions = try nmFunctions(crashChild)
        #expect(functions.count > 100)
        // Aliases (two names for one address) are found under one of their names.
        let namesByStart = Dictionary(grouping: functions, by: { $0.0 }).mapValues { Set($0.map(\.2)) }
        for (start, size, _) in functions {
            for offset in [start, start + size / 2, start + size - 1] {
                let symbol = try #require(table.symbol(at: offset), "nothing at 0x\(String(offset, radix: 16))")
                let expected = try #require(namesByStart[start])
                #expect(expected.contains(symbol.mangledName ?? symbol.function), "\(symbol) at \(offset)")
            }
        }
        let swiftFunction = try #require(functions.first { $0.2.hasPrefix("$s") })
        let named = try #require(table.symbol(at: swiftFunction.0))
        #expect(named.mangledName == swiftFunction.2 && named.function != swiftFunction.2, "demangled: \(named)")
        #expect(table.symbol(at: 0) == nil)
    }

    @Test("truncated copies, flipped bytes and absurd section sizes give nil or names, never a trap")
    func malformedFiles() throws {
        let directory = TemporaryDirectory()
        let original = try Data(contentsOf: URL(fileURLWithPath: crashChild))
        var generator = SystemRandomNumberGenerator()
        var candidates: [Data] = [Data(), Data("\u{7F}ELF".utf8), Data(repeating: 0xFF, count: 4096)]
        for length in [16, 64, 65, 4096, original.count / 2, original.count - 1] {
            candidates.append(original.prefix(length))
        }
        for _ in 0..<20 {
            var damaged = original
            for _ in 0..<64 {
                // Damage the headers and the section table, where sizes and offsets live.
                let inHeaders = Int.random(in: 0..<64, using: &generator)
                damaged[inHeaders] = UInt8.random(in: 0...255, using: &generator)
                let anywhere = Int.random(in: 0..<damaged.count, using: &generator)
                damaged[anywhere] = UInt8.random(in: 0...255, using: &generator)
            }
            candidates.append(damaged)
        }
        for (index, bytes) in candidates.enumerated() {
            let path = "\(directory.path)/candidate-\(index)"
            try bytes.write(to: URL(fileURLWithPath: path))
            if let table = ELFSymbolTable(path: path) {
                _ = table.symbol(at: UInt64.random(in: 0..<UInt64(max(bytes.count, 1)), using: &generator))
            }
            _ = ELFBuildID.read(path: path)
        }
        #expect(ELFSymbolTable(path: "\(directory.path)/candidate-0") == nil)
        #expect(ELFSymbolTable(path: "\(directory.path)/no-such-file") == nil)
    }
}
