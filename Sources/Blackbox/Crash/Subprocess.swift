import BlackboxSymbols
import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a helper program (llvm-symbolizer) to completion: input on stdin, output from stdout
/// (`PipedChild` starts it).
enum Subprocess {
    struct Result {
        var status: Int32
        var output: [UInt8]
    }

    /// The input must fit in a pipe buffer (64 KiB) so writing it all first cannot deadlock.
    static func run(_ executable: String, _ arguments: [String], input: [UInt8]) -> Result? {
        guard input.count < 60_000, let child = PipedChild.spawn(executable, arguments) else { return nil }
        _ = child.write(input)
        close(child.input)
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = retryingEINTR { chunk.withUnsafeMutableBytes { read(child.output, $0.baseAddress, $0.count) } }
            if n <= 0 { break }
            output.append(contentsOf: chunk[0..<n])
        }
        close(child.output)
        var status: Int32 = 0
        _ = retryingEINTR { waitpid(child.pid, &status, 0) }
        return Result(status: status, output: output)
    }

    /// The first executable named `name` in `$PATH`.
    static func findInPath(_ name: String, extraDirectories: [String] = []) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + extraDirectories {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
