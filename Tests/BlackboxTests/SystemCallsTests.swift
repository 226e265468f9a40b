import BlackboxSystem
import Foundation
import Synchronization
import Testing

@Suite("The system-call floor")
struct SystemCallsTests {
    @Test("a read interrupted by a signal goes on reading, and returns what came afterwards")
    func readInterruptedBySignal() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        // A handler installed without SA_RESTART: a blocked read(2) returns EINTR when it runs.
        var ignoring = sigaction()
        ignoring.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&ignoring.sa_mask)
        ignoring.sa_flags = 0
        var previous = sigaction()
        #expect(sigaction(SIGURG, &ignoring, &previous) == 0)
        defer { sigaction(SIGURG, &previous, nil) }

        let reader = Mutex<(thread: pthread_t?, interruptions: Int, result: Int?)>((nil, 0, nil))
        let readEnd = ends[0]
        let thread = Thread {
            // Started from a Dispatch worker, a thread inherits its mask, which blocks most signals.
            var urgent = sigset_t()
            sigemptyset(&urgent)
            sigaddset(&urgent, SIGURG)
            pthread_sigmask(SIG_UNBLOCK, &urgent, nil)
            reader.withLock { $0.thread = pthread_self() }
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = retryingEINTR {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { reader.withLock { $0.interruptions += 1 } }
                return count
            }
            reader.withLock { $0.result = count }
        }
        thread.start()
        // Signals until one interrupted the read (one sent before the read blocked interrupts nothing).
        let deadline = ContinuousClock.now + .seconds(20)
        while reader.withLock({ $0.interruptions }) == 0 && ContinuousClock.now < deadline {
            if let target = reader.withLock({ $0.thread }) { pthread_kill(target, SIGURG) }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(reader.withLock { $0.interruptions } > 0)
        #expect(write(ends[1], "ok", 2) == 2)
        while reader.withLock({ $0.result }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(reader.withLock { $0.result } == 2)
    }

    @Test("another failure is returned at once, errno kept")
    func otherFailures() {
        var calls = 0
        let result = retryingEINTR { () -> Int32 in
            calls += 1
            errno = calls < 3 ? EINTR : EBADF
            return -1
        }
        #expect(result == -1 && errno == EBADF && calls == 3)
        let error = SystemCallError("open", errno: ENOSPC)
        #expect(error.errno == ENOSPC)
        #expect(error.description == "open: No space left on device")
    }

    @Test("writeFully writes past a full pipe while the reader drains it, and fails with errno on a closed one")
    func wholeWrites() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        // Four times a pipe's default capacity: the writes are short, and continue.
        let bytes = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let readEnd = ends[0]
        let drained = Task.detached { () -> [UInt8] in
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = retryingEINTR { chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) } }
                if count <= 0 { return received }
                received += chunk[..<count]
            }
        }
        #expect(bytes.withUnsafeBytes { writeFully(ends[1], $0.baseAddress, $0.count) })
        close(ends[1])
        #expect(await drained.value == bytes)
        close(ends[0])

        #expect(!writeFully(ends[1], bytes, 1))
        #expect(errno == EBADF)
    }
}
