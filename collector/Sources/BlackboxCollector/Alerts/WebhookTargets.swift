import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where webhooks may send: a project's admin is a tenant, not the operator, so a webhook must not
/// reach the collector's own network (cloud metadata at 169.254.169.254, databases on 10.x, the
/// collector's loopback). Every address a webhook's host resolves to is checked, when it is created
/// and again before each delivery, and the delivery then connects to the address that was checked
/// (no second lookup a rebinding DNS server could answer differently). Hand-written: no maintained
/// Swift package classifies addresses; the ranges are IANA's special-purpose registries.
public struct WebhookTargets: Sendable, Equatable {
    /// Ranges the operator allows although they are internal (`--webhook-allow`).
    public var allowed: [AddressRange]

    public init(allowed: [AddressRange] = []) {
        self.allowed = allowed
    }

    /// Parses `CIDR[,CIDR…]`, as `--webhook-allow` and `BLACKBOX_COLLECTOR_WEBHOOK_ALLOW` take it.
    public init(allowing list: String) throws(AddressRange.Problem) {
        var ranges: [AddressRange] = []
        for item in list.split(separator: ",") where !item.trimmingCharacters(in: .whitespaces).isEmpty {
            ranges.append(try AddressRange(String(item.trimmingCharacters(in: .whitespaces))))
        }
        self.init(allowed: ranges)
    }

    /// Loopback, private (RFC 1918), carrier-grade NAT, link-local, unique-local, multicast, reserved,
    /// "this network", benchmarking and documentation ranges, and IPv4-mapped forms of them; and every
    /// IPv6 form that carries an IPv4 address a gateway may translate to (NAT64, well-known and
    /// local-use; 6to4; Teredo; IPv4-compatible and IPv4-translated) or that is deprecated site-local
    /// (security review 2026-11-27, finding 8).
    static let internalRanges: [AddressRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
        "224.0.0.0/4", "240.0.0.0/4", "::/96", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
        "64:ff9b::/96", "64:ff9b:1::/48", "2001::/32", "2002::/16", "2001:db8::/32", "::ffff:0:0:0/96",
    ].compactMap { try? AddressRange($0) }

    public func permits(_ address: IPAddress) -> Bool {
        let plain = address.unmappedIPv4 ?? address
        if allowed.contains(where: { $0.contains(plain) || $0.contains(address) }) { return true }
        return !Self.internalRanges.contains { $0.contains(plain) }
    }

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case unresolvable(host: String)
        case internalAddress(host: String, address: String)
        public var description: String {
            switch self {
            case .unresolvable(let host): "\(host) does not resolve"
            case .internalAddress(let host, let address):
                "\(host) is \(address), an internal address (loopback, private, link-local or reserved); the operator can allow its range with --webhook-allow"
            }
        }
    }

    /// The address to connect to for `host`: every address it resolves to must be permitted.
    public func check(host: String) async -> Result<IPAddress, Refusal> {
        let addresses = await Self.resolve(host)
        guard let first = addresses.first else { return .failure(.unresolvable(host: host)) }
        if let refused = addresses.first(where: { !permits($0) }) {
            return .failure(.internalAddress(host: host, address: refused.description))
        }
        return .success(first)
    }

    /// getaddrinfo off the cooperative pool (it blocks). Numeric forms such as `0x7f000001` or
    /// `2130706433` resolve to the address they mean, so they are checked like any other.
    static func resolve(_ host: String) async -> [IPAddress] {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var hints = addrinfo()
                hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
                var list: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(bare, nil, &hints, &list) == 0 else {
                    continuation.resume(returning: [])
                    return
                }
                defer { freeaddrinfo(list) }
                var addresses: [IPAddress] = []
                var entry = list
                while let current = entry {
                    if let address = IPAddress(current.pointee.ai_addr), !addresses.contains(address) {
                        addresses.append(address)
                    }
                    entry = current.pointee.ai_next
                }
                continuation.resume(returning: addresses)
            }
        }
    }
}

/// An IPv4 or IPv6 address, as 4 or 16 bytes.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    init?(_ socketAddress: UnsafeMutablePointer<sockaddr>?) {
        guard let socketAddress else { return nil }
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
            }
        default: return nil
        }
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// `::ffff:a.b.c.d` as `a.b.c.d`.
    var unmappedIPv4: IPAddress? {
        guard bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else {
            return nil
        }
        return IPAddress(bytes: Array(bytes[12...]))
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        return bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
                ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
    }
}

/// `address/prefix`, IPv4 or IPv6.
public struct AddressRange: Sendable, Equatable {
    public var network: IPAddress
    public var prefixLength: Int

    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    public init(_ text: String) throws(Problem) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let network = IPAddress(String(first)) else {
            throw Problem(description: "not an address range (CIDR such as 127.0.0.0/8): \(text.prefix(64))")
        }
        let bits = network.bytes.count * 8
        let length = parts.count == 2 ? Int(parts[1]) : bits
        guard let length, (0...bits).contains(length) else {
            throw Problem(description: "the prefix length of \(text.prefix(64)) must be 0 to \(bits)")
        }
        self.network = network
        self.prefixLength = length
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for (index, byte) in network.bytes.enumerated() where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address.bytes[index] & mask != byte & mask { return false }
            remaining -= bits
        }
        return true
    }
}
