#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// What Linux says about a process and the machine, read from /proc and /sys: start times, the boot,
/// and the counters of the OOM killer. Every value may be missing (no /proc in a sandbox, cgroup v1 or
/// v2, a counter the kernel does not have): callers treat nil as "unknown".
enum ProcessFacts {
    /// Seconds since the epoch at which `pid` started: /proc/<pid>/stat's start time (clock ticks
    /// after boot) plus /proc/stat's `btime`.
    static func startTime(of pid: pid_t) -> Double? {
        startTicks(of: pid).flatMap(startTime(afterBootTicks:))
    }

    /// Seconds since the epoch of `ticks` clock ticks after boot.
    static func startTime(afterBootTicks ticks: UInt64) -> Double? {
        guard let boot = DurableFile.read("/proc/stat", limit: 1 << 20) else { return nil }
        let bootLine = String(decoding: boot, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("btime ") }
        guard let bootTime = bootLine.flatMap({ Double($0.dropFirst(6)) }) else { return nil }
        return bootTime + Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// When `pid` started, in clock ticks after boot (/proc/<pid>/stat's field 22): the same for the
    /// process's whole life, where its start in epoch seconds moves by a second when the wall clock
    /// is stepped, so it tells apart two processes that had one pid within seconds (a container's app
    /// restarting as pid 1).
    static func startTicks(of pid: pid_t) -> UInt64? {
        guard let stat = DurableFile.read("/proc/\(pid)/stat", limit: 8192) else { return nil }
        let text = String(decoding: stat, as: UTF8.self)
        // Field 2 (the command) may contain spaces; count fields after its closing parenthesis.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// Whether `pid` is the process that started at `startTime` (or, known, at `ticks` after boot)
    /// and is still running: a pid is reused once its process is gone.
    static func isRunning(_ pid: pid_t, startedAt startTime: Double, ticks: UInt64? = nil) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        if let ticks, let actual = startTicks(of: pid) { return actual == ticks }
        guard let actual = self.startTime(of: pid) else { return false }
        return abs(actual - startTime) < 2
    }

    /// Changes at every boot: a run recorded under another boot id died with the machine.
    static func bootID() -> String? {
        DurableFile.read("/proc/sys/kernel/random/boot_id", limit: 256).map {
            String(decoding: $0.filter { $0 != 0x0A }, as: UTF8.self)
        }
    }

    /// OOM kills since boot, machine-wide (/proc/vmstat `oom_kill`).
    static func machineOOMKills() -> Int? {
        counter("oom_kill", inFile: "/proc/vmstat")
    }

    /// The memory cgroup of this process and the file its OOM-kill counter is in: cgroup v2's
    /// `memory.events` or v1's `memory.oom_control` (both have an `oom_kill` line).
    static func memoryCgroupEventsFile() -> String? {
        guard let bytes = DurableFile.read("/proc/self/cgroup", limit: 64 << 10) else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = parts[2] == "/" ? "" : String(parts[2])
            if parts[1].split(separator: ",").contains("memory") {
                return "/sys/fs/cgroup/memory\(path)/memory.oom_control"
            }
            if parts[0] == "0", parts[1].isEmpty, access("/sys/fs/cgroup\(path)/memory.events", R_OK) == 0 {
                return "/sys/fs/cgroup\(path)/memory.events"
            }
        }
        return nil
    }

    /// The `oom_kill` count in a cgroup's events file.
    static func cgroupOOMKills(_ eventsFile: String) -> Int? {
        counter("oom_kill", inFile: eventsFile)
    }

    /// The number after `name ` on its own line of a small key-value file.
    private static func counter(_ name: String, inFile path: String) -> Int? {
        guard let bytes = DurableFile.read(path, limit: 1 << 20) else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == name { return Int(parts[1]) }
        }
        return nil
    }
}
