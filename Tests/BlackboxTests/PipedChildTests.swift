import BlackboxSymbols
import Testing

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
}
