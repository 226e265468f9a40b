#if canImport(Glibc)
    import Glibc
#endif

/// A small seeded generator, so that a failing run can be repeated.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Seeded random-mutation fuzzing with a clock: every input is timed by the CPU time of the thread
/// that parses it (a loaded machine delays a thread, it does not make it spend more CPU), and an
/// input that takes more than `budget(size)` is reported, so a quadratic path fails the run as a
/// trap does. `BLACKBOX_FUZZ_SEED` repeats a run, `BLACKBOX_FUZZ_SECONDS` (default 2) sets how long
/// each target runs.
public enum Fuzzer {
    public static var seconds: Double {
        environment("BLACKBOX_FUZZ_SECONDS").flatMap(Double.init) ?? 2
    }

    /// What a run did: how many inputs, the slowest, and every input over its budget.
    public struct Outcome: Sendable {
        public var runs = 0
        public var slowest: (seconds: Double, size: Int) = (0, 0)
        public var overBudget: [(seconds: Double, size: Int, prefix: [UInt8])] = []
    }

    /// A linear budget, generous for a debug build: 0.25 s, and 40 µs of CPU per byte (a quadratic
    /// path over a 32 KB input takes minutes).
    public static func linearBudget(_ size: Int) -> Double { 0.25 + 40e-6 * Double(size) }

    /// Runs `body` on the corpus, then on mutants until the time is up or `iterationsCap` inputs ran.
    public static func run(
        _ name: String, corpus: [[UInt8]], numbers: Bool, iterationsCap: Int = .max,
        budget: (Int) -> Double = linearBudget, _ body: ([UInt8]) -> Void
    ) -> Outcome {
        let seed = environment("BLACKBOX_FUZZ_SEED").flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        // Unbuffered, so that the seed is out before a trap ends the process.
        let line = "fuzz \(name): seed \(seed) (BLACKBOX_FUZZ_SEED=\(seed) repeats it)\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        var random = SplitMix64(seed: seed)
        var outcome = Outcome()
        func timed(_ input: [UInt8]) {
            let started = threadCPUSeconds()
            body(input)
            let spent = threadCPUSeconds() - started
            outcome.runs += 1
            if spent > outcome.slowest.seconds { outcome.slowest = (spent, input.count) }
            if spent > budget(input.count) {
                outcome.overBudget.append((spent, input.count, Array(input.prefix(200))))
            }
        }
        let deadline = monotonicSeconds() + seconds
        corpus.forEach(timed)
        while monotonicSeconds() < deadline, outcome.runs < iterationsCap, !corpus.isEmpty {
            var bytes = corpus[Int(random.next() % UInt64(corpus.count))]
            for _ in 0...Int(random.next() % 4) { mutate(&bytes, numbers: numbers, random: &random) }
            timed(bytes)
        }
        print(
            "fuzz \(name): \(outcome.runs) inputs, slowest \(outcome.slowest.seconds) s of CPU "
                + "(\(outcome.slowest.size) bytes), \(outcome.overBudget.count) over budget")
        return outcome
    }

    static let extremes = [
        "0", "-1", "1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "18446744073709551615", "18446744073709551616", "4294967296", "2147483647", "999999999999999999",
        "4611686018427387904", "0x7fffffffffffffff", "0xffffffffffffffff", "1e308", "-0", "NaN",
    ].map { Array($0.utf8) }
    static let words: [UInt64] = [
        0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 32, 1 << 62, .max, 1 << 63,
    ]

    public static func mutate(_ bytes: inout [UInt8], numbers: Bool, random: inout SplitMix64) {
        guard !bytes.isEmpty else {
            bytes = [UInt8(truncatingIfNeeded: random.next())]
            return
        }
        let at = Int(random.next() % UInt64(bytes.count))
        switch random.next() % (numbers ? 8 : 6) {
        case 0: bytes[at] ^= 1 << UInt8(random.next() % 8)
        case 1: bytes[at] = [0, 0xFF, 0x7F, 0x80, 0x0A, 0x20][Int(random.next() % 6)]
        case 2:
            let word = words[Int(random.next() % UInt64(words.count))]
            for index in 0..<min(8, bytes.count - at) {
                bytes[at + index] = UInt8(truncatingIfNeeded: word >> (8 * index))
            }
        case 3: bytes.removeSubrange(at...)
        case 4:
            let end = min(bytes.count, at + 1 + Int(random.next() % 256))
            bytes.insert(contentsOf: bytes[at..<end], at: end)
        case 5:
            let end = min(bytes.count, at + 1 + Int(random.next() % 64))
            bytes.removeSubrange(at..<end)
        default: replaceNumber(in: &bytes, near: at, random: &random)
        }
    }

    /// Replaces the decimal or hex number at or after `at` with an extreme value.
    private static func replaceNumber(in bytes: inout [UInt8], near at: Int, random: inout SplitMix64) {
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        guard let start = bytes[at...].firstIndex(where: isDigit) ?? bytes[..<at].lastIndex(where: isDigit) else {
            return
        }
        var end = start
        while end < bytes.count, isDigit(bytes[end]) || bytes[end] == 0x78 || (0x61...0x66).contains(bytes[end]) {
            end += 1
        }
        bytes.replaceSubrange(start..<end, with: extremes[Int(random.next() % UInt64(extremes.count))])
    }

    private static func threadCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    private static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
