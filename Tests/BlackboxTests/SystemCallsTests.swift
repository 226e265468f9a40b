import BlackboxSystem
import Foundation
import Synchronization
import Testing

@Suite("The system-call floor")
struct SystemCallsTests {
    @Test("a call that fails with EINTR is made again until it returns")
    func retriedOnEINTR() {
        var calls = 0
        let result = retryingEINTR { () -> Int in
            calls += 1
            guard calls == 3 else {
                errno = EINTR
                return -1
            }
            return 5
        }
        #expect(result == 5 && calls == 3)
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

    @Test("writeFully writes past a full pipe while the reader drains it, and fails with errno on a bad descriptor")
    func wholeWrites() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        // Four times a pipe's default capacity: the writes are short, and continue.
        let bytes = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let readEnd = ends[0]
        // Drained by a thread of its own: a task would need a cooperative thread while this test
        // blocks one in `write` (two of them, on two cores, with a hundred tests running).
        let drained = Mutex<[UInt8]?>(nil)
        Thread {
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = retryingEINTR { chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) } }
                if count <= 0 { break }
                received += chunk[..<count]
            }
            drained.withLock { $0 = received }
        }.start()
        let whole = bytes.withUnsafeBytes { writeFully(ends[1], $0.baseAddress, $0.count) }
        #expect(whole)
        close(ends[1])
        let deadline = ContinuousClock.now + .seconds(60)
        while drained.withLock({ $0 == nil }) && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(drained.withLock { $0 == bytes })
        close(ends[0])

        // Not a closed descriptor: its number may be another test's by now.
        let written = writeFully(-1, bytes, 1)
        #expect(!written && errno == EBADF)
    }
}
