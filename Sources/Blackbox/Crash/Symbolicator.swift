import BlackboxFormat
import BlackboxSymbols

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
        var arguments = ["--obj=\(imagePath)"] + SymbolizerOutput.arguments
        arguments += debugFileDirectories.map { "--debug-file-directory=\($0)" }
        let input = offsets.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n"
        guard let result = Subprocess.run(executable, arguments, input: Array(input.utf8)), result.status == 0 else {
            return nil
        }
        let lines = result.output.split(separator: 0x0A)
        guard lines.count == offsets.count else { return nil }
        return lines.map { SymbolizerOutput.symbols(fromJSONLine: Array($0)) }
    }
}
