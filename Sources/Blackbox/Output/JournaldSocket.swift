import BlackboxSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The systemd journal's native socket (https://systemd.io/JOURNAL_NATIVE_PROTOCOL/), as
/// `sd_journal_sendv` speaks it: one datagram per entry, sent to the socket's path each time (an
/// unconnected socket, so a journald that restarted and made its socket anew is reached again), and an
/// entry too large for a datagram sent as a sealed memfd whose descriptor travels in the datagram.
/// Hand-written: libsystemd's client is C with a link-time dependency apps do not all have, and the
/// protocol is these few calls.
///
/// Only the writer thread sends, a batch at a time. journald takes its entries one datagram at a time
/// and far fewer per second than the file (W2: ~35 k/s against 3.5 M/s, `make bench-journald`), so
/// waiting for it whenever its queue is full would hold the file to its rate. The writer waits for a
/// full queue at most `maxWaitPerBatch` per batch, and not at all while the journal is behind (the
/// previous batch found it full past the wait): then each batch gives it what its queue takes, and the
/// first entry that does not fit ends that batch's sends. The log file keeps every line; what the
/// journal misses is said once on stderr.
final class JournaldSocket {
    static let defaultPath = "/run/systemd/journal/socket"

    enum Outcome: Equatable {
        case sent
        /// The journal's queue stayed full for the whole wait, or it was full and we did not wait.
        case full
        /// Nothing listens at the path (no journald, or it is restarting), or the send failed otherwise.
        case failed(errno: Int32)
    }

    let path: String
    private let maxWaitPerBatch: UInt64
    /// The last batch found the queue full after its wait: the next one does not wait.
    private var behind = false
    /// The causes already said on stderr (once each): while the journal is behind, every batch finds
    /// it full, and saying so must not build a message each time.
    private var reportedCauses: Set<Int32> = []
    private let descriptor: Int32
    private var address = sockaddr_un()
    private let addressLength: socklen_t

    /// A socket for `path`; nil when the path does not fit a socket address or no socket can be made.
    init?(path: String, maxWaitPerBatch: Duration) {
        let pathBytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !pathBytes.isEmpty, pathBytes.count < capacity else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        self.path = path
        self.maxWaitPerBatch = maxWaitPerBatch.nanoseconds
        self.descriptor = descriptor
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        addressLength = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        // One blocking send waits at most the whole budget.
        let nanoseconds = max(self.maxWaitPerBatch, 1_000_000)
        var timeout = timeval(
            tv_sec: Int(nanoseconds / 1_000_000_000), tv_usec: Int(nanoseconds % 1_000_000_000 / 1000))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// True when a socket exists at `path`: something (journald) made it. Whether it reads is known
    /// only by sending.
    static func isPresent(at path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }

    /// Sends each entry of a batch (`bytes` cut at `recordEnds`), as the type's documentation says.
    func sendBatch(_ bytes: UnsafeRawBufferPointer, recordEnds: [Int]) {
        guard let base = bytes.baseAddress else { return }
        let deadline = monotonicNanoseconds() &+ maxWaitPerBatch
        var wait = !behind
        var start = 0
        behind = false
        sending: for end in recordEnds {
            let outcome = send(UnsafeRawBufferPointer(start: base + start, count: end - start), wait: wait)
            start = end
            switch outcome {
            case .sent:
                if wait && monotonicNanoseconds() > deadline { wait = false }
                continue
            case .full where wait:
                reportLoss(outcome)  // a whole wait and still no room: this entry is lost
                wait = false
            case .full:
                behind = true
                reportLoss(outcome)
                break sending
            case .failed(ECONNREFUSED), .failed(ENOENT), .failed(ECONNRESET):
                reportLoss(outcome)
                break sending  // nobody reads the socket: every further send fails the same way
            case .failed:
                reportLoss(outcome)  // this entry only (a memfd that could not be made)
            }
        }
    }

    /// Once per process and cause: the journal is there to read logs in, the file keeps every line.
    private func reportLoss(_ outcome: Outcome) {
        let cause: Int32
        switch outcome {
        case .sent: return
        case .full: cause = 0
        case .failed(let code): cause = code
        }
        guard reportedCauses.insert(cause).inserted else { return }
        switch outcome {
        case .sent:
            return
        case .full:
            InternalDiagnostics.report(
                "the systemd journal at \(path) did not keep up; entries it had no room for were not sent (the log file has every line)",
                key: "journald-full")
        case .failed(let code):
            InternalDiagnostics.report(
                "cannot send to the systemd journal at \(path): \(errnoDescription(code)); entries were not sent (the log file has every line)",
                key: "journald-\(code)")
        }
    }

    /// Sends one entry (`NAME=value\n` fields, or binary-framed ones); waits for room only if `wait`.
    private func send(_ entry: UnsafeRawBufferPointer, wait: Bool) -> Outcome {
        let flags = Int32(MSG_NOSIGNAL) | (wait ? 0 : Int32(MSG_DONTWAIT))
        var outcome = sendDatagram(entry, descriptorToPass: nil, flags: flags)
        // Larger than the socket takes in one datagram: journald reads the entry from a sealed memfd.
        if case .failed(let code) = outcome, code == EMSGSIZE || code == ENOBUFS {
            outcome = sendThroughMemfd(entry, flags: flags)
        }
        return outcome
    }

    private func sendDatagram(_ bytes: UnsafeRawBufferPointer, descriptorToPass: Int32?, flags: Int32) -> Outcome {
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        // SCM_RIGHTS for one descriptor: a cmsghdr (aligned to size_t), then the int, padded (CMSG_SPACE).
        let headerSize = MemoryLayout<cmsghdr>.size
        let controlSpace = headerSize + MemoryLayout<Int>.size
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlSpace, alignment: MemoryLayout<Int>.alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlSpace)
        var message = msghdr()
        let result = withUnsafeMutablePointer(to: &address) { address in
            withUnsafeMutablePointer(to: &vector) { vector in
                message.msg_name = UnsafeMutableRawPointer(address)
                message.msg_namelen = addressLength
                message.msg_iov = vector
                message.msg_iovlen = 1
                if let descriptorToPass {
                    let header = control.assumingMemoryBound(to: cmsghdr.self)
                    header.pointee.cmsg_len = headerSize + MemoryLayout<Int32>.size
                    header.pointee.cmsg_level = SOL_SOCKET
                    header.pointee.cmsg_type = Int32(SCM_RIGHTS)
                    control.storeBytes(of: descriptorToPass, toByteOffset: headerSize, as: Int32.self)
                    message.msg_control = control
                    message.msg_controllen = controlSpace
                }
                return retryingEINTR { sendmsg(descriptor, &message, flags) }
            }
        }
        if result >= 0 { return .sent }
        let code = errno
        return code == EAGAIN || code == EWOULDBLOCK ? .full : .failed(errno: code)
    }

    /// journald accepts an entry of any size (up to its own limits) as a memfd sealed against change,
    /// sent with an empty datagram.
    private func sendThroughMemfd(_ entry: UnsafeRawBufferPointer, flags: Int32) -> Outcome {
        guard let memfdCreate = Self.memfdCreate else { return .failed(errno: ENOSYS) }
        let memfd = memfdCreate("blackbox-journal-entry", Memfd.closeOnExec | Memfd.allowSealing)
        guard memfd >= 0 else { return .failed(errno: errno) }
        defer { close(memfd) }
        guard writeFully(memfd, entry.baseAddress, entry.count) else { return .failed(errno: errno) }
        guard fcntl(memfd, Memfd.addSeals, Memfd.sealShrink | Memfd.sealGrow | Memfd.sealWrite | Memfd.sealSeal) == 0
        else { return .failed(errno: errno) }
        return sendDatagram(UnsafeRawBufferPointer(start: nil, count: 0), descriptorToPass: memfd, flags: flags)
    }

    /// glibc's `memfd_create` (2.27 and later), looked up at run time: Swift's Glibc module declares
    /// neither it nor the sealing constants (GNU extensions), whose values are the kernel's ABI
    /// (linux/memfd.h, linux/fcntl.h).
    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let memfdCreate: MemfdCreate? = dlsym(nil, "memfd_create").map {
        unsafeBitCast($0, to: MemfdCreate.self)
    }

    private enum Memfd {
        static let closeOnExec: UInt32 = 0x1
        static let allowSealing: UInt32 = 0x2
        static let addSeals: Int32 = 1033
        static let sealSeal: Int32 = 0x1
        static let sealShrink: Int32 = 0x2
        static let sealGrow: Int32 = 0x4
        static let sealWrite: Int32 = 0x8
    }
}
