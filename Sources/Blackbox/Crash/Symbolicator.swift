import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// Names frames with llvm-symbolizer (it ships with the Swift toolchain and with Debian's llvm):
/// DWARF inlining and file:line when debug info is present, the symbol table otherwise. Swift names
/// are demangled with the runtime's own `swift_demangle`.
///
/// Chosen over Swift's `Runtime` module for reports from *another* process: `Runtime` symbolicates
/// only backtraces it captured itself (its compact formats are not a stable public input), while
/// llvm-symbolizer takes an image path plus offsets, which is also exactly what a server does later.
struct Symbolicator {
    let executable: String
    var debugFileDirectories: [String] = []

    /// `$BLACKBOX_SYMBOLIZER`, then `llvm-symbolizer` in `$PATH` or the usual toolchain places.
    static func locate(configured: String?) -> Symbolicator? {
        if let configured, access(configured, X_OK) == 0 { return Symbolicator(executable: configured) }
        if let env = getenv("BLACKBOX_SYMBOLIZER").map({ String(cString: $0) }), access(env, X_OK) == 0 {
            return Symbolicator(executable: env)
        }
        return Subprocess.findInPath(
            "llvm-symbolizer", extraDirectories: ["/opt/swift/usr/bin", "/usr/lib/llvm-14/bin"]
        )
        .map { Symbolicator(executable: $0) }
    }

    /// Symbols for each offset (image-relative, already adjusted to `pc-1` for return addresses), in
    /// order; nil when the tool failed.
    func symbolicate(imagePath: String, offsets: [UInt64]) -> [[CrashReport.Symbol]]? {
        guard !offsets.isEmpty else { return [] }
        var arguments = ["--obj=\(imagePath)", "--inlining", "--output-style=JSON", "--functions=linkage"]
        arguments += debugFileDirectories.map { "--debug-file-directory=\($0)" }
        let input = offsets.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n"
        guard let result = Subprocess.run(executable, arguments, input: Array(input.utf8)), result.status == 0 else {
            return nil
        }
        // llvm-symbolizer's JSON output, one object per input line.
        struct Line: Decodable {
            struct Entry: Decodable {
                var functionName: String?
                var fileName: String?
                var line: Int?
                var column: Int?
                enum CodingKeys: String, CodingKey {
                    case functionName = "FunctionName"
                    case fileName = "FileName"
                    case line = "Line"
                    case column = "Column"
                }
            }
            var symbol: [Entry]?
            enum CodingKeys: String, CodingKey { case symbol = "Symbol" }
        }
        let decoder = JSONDecoder()
        let lines = result.output.split(separator: 0x0A)
        guard lines.count == offsets.count else { return nil }
        return lines.map { line in
            guard let parsed = try? decoder.decode(Line.self, from: Data(line)), let entries = parsed.symbol else {
                return []
            }
            return entries.enumerated().compactMap { index, entry in
                guard let raw = entry.functionName, !raw.isEmpty, raw != "??" else { return nil }
                let file = entry.fileName.flatMap { $0.isEmpty || $0 == "??" ? nil : $0 }
                let demangled = Self.demangle(raw)
                return CrashReport.Symbol(
                    function: demangled ?? raw, mangledName: demangled == nil ? nil : raw, file: file,
                    line: entry.line.flatMap { $0 > 0 ? $0 : nil }, column: entry.column.flatMap { $0 > 0 ? $0 : nil },
                    inlined: index < entries.count - 1)
            }
        }
    }

    /// Swift names through the runtime's demangler; C++ names are demangled by llvm-symbolizer.
    static func demangle(_ name: String) -> String? {
        guard name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_T") || name.hasPrefix("$e") else {
            return nil
        }
        return name.withCString { pointer in
            guard let result = _swiftDemangle(pointer, UInt(strlen(pointer)), nil, nil, 0) else { return nil }
            defer { free(result) }
            return String(cString: result)
        }
    }
}

@_silgen_name("swift_demangle")
private func _swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: UInt, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<UInt>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?
