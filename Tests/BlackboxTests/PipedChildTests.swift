import BlackboxSymbols
import Testing

@testable import Blackbox

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Helper processes")
struct PipedChildTests {
    @Test("writing to a helper that died fails with EPIPE instead of ending the process by SIGPIPE")
    func writeToADeadChild() {
        // The default action (termination), whatever the test runner set: without the guard this
        // test would end the test process.
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        guard let child = PipedChild.spawn("/bin/true", []) else {
            Issue.record("cannot start /bin/true")
            return
        }
        var status: Int32 = 0
        while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        #expect(!child.write([UInt8](repeating: 0x41, count: 128 << 10)))
        var pending = sigset_t()
        sigpending(&pending)
        #expect(sigismember(&pending, SIGPIPE) == 0, "no SIGPIPE is left pending")
        close(child.input)
        close(child.output)
    }

    /// Issue 49, item 1: the start-up symbolizer held a crash-looping server's listening socket.
    @Test("a helper gets descriptors 0-2 and its pipes, never the app's (a listening socket included)")
    func onlyItsOwnDescriptors() throws {
        // A listening socket as a server has it: not close-on-exec.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(bound == 0 && listen(listener, 1) == 0)
        #expect(fcntl(listener, F_GETFD) & FD_CLOEXEC == 0)
        // Through the path crash processing takes to llvm-symbolizer (`Subprocess` → `PipedChild`).
        let result = try #require(Subprocess.run("/bin/sh", ["-c", "ls /proc/$$/fd"], input: []))
        let output = result.output
        let descriptors = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap {
            Int32($0)
        }
        #expect(descriptors.sorted() == [0, 1, 2], "the helper's descriptors: \(descriptors)")
    }
}
