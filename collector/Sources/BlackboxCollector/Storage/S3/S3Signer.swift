import BlackboxFormat
import Crypto
import Foundation

/// AWS Signature Version 4 for S3 requests, in the `Authorization` header
/// (docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).
///
/// Written here on swift-crypto: neither Soto nor the AWS SDK for Swift is in the package mirror, and
/// what the collector needs is one signing function. The payload's SHA-256 is always signed
/// (never `UNSIGNED-PAYLOAD`), so a body changed on the way is refused by the store.
struct S3Signer: Sendable {
    struct Credentials: Sendable, Equatable {
        var accessKeyID: String
        var secretAccessKey: String
        var sessionToken: String?
    }

    let credentials: Credentials
    let region: String
    let service = "s3"

    /// The SHA-256 of no bytes, for requests without a body.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The headers to send: `headers` (which must hold `host`; every one given is signed) with
    /// `x-amz-date`, `x-amz-content-sha256`, the session token if any, and `authorization`.
    /// `path` is the request's path as sent, already encoded (`S3Signer.encodedPath`); `query` its
    /// parameters unencoded.
    func sign(
        method: String, encodedPath: String, query: [(name: String, value: String)], headers: [String: String],
        payloadSHA256: String, at date: Date
    ) -> [String: String] {
        let time = Self.timestamps(date)
        var signed = Dictionary(headers.map { ($0.key.lowercased(), Self.trimmed($0.value)) }) { _, last in last }
        signed["x-amz-date"] = time.full
        signed["x-amz-content-sha256"] = payloadSHA256
        if let token = credentials.sessionToken { signed["x-amz-security-token"] = token }
        let names = signed.keys.sorted()
        let canonicalRequest = [
            method,
            encodedPath.isEmpty ? "/" : encodedPath,
            Self.canonicalQuery(query),
            names.map { "\($0):\(signed[$0] ?? "")\n" }.joined(),
            names.joined(separator: ";"),
            payloadSHA256,
        ].joined(separator: "\n")
        let scope = "\(time.day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", time.full, scope,
            SHA256.hash(data: Data(canonicalRequest.utf8)).lowercaseHex,
        ].joined(separator: "\n")
        let signature = lowercaseHex(
            HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: signingKey(day: time.day)))
        signed["authorization"] =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope),"
            + "SignedHeaders=\(names.joined(separator: ";")),Signature=\(signature)"
        return signed
    }

    private func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// `20130524T000000Z` and `20130524`, in UTC.
    static func timestamps(_ date: Date) -> (full: String, day: String) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))"
        return ("\(day)T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z", day)
    }

    /// The query as signed and as sent: names and values encoded, sorted by name then value.
    static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let pairs: [(name: String, value: String)] = query.map { (encoded($0.name), encoded($0.value)) }
        let sorted = pairs.sorted { left, right in
            left.name == right.name ? left.value < right.value : left.name < right.name
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// A key's path as sent and signed: every byte but the unreserved ones and `/` percent-encoded
    /// (S3 signs the path as sent, without normalizing it).
    static func encodedPath(_ path: String) -> String {
        encoded(path, keeping: UInt8(ascii: "/"))
    }

    /// RFC 3986 encoding as SigV4 wants it: `A-Z a-z 0-9 - . _ ~` kept, every other byte `%XX`.
    static func encoded(_ text: String, keeping extra: UInt8? = nil) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                result.append(byte)
            case extra:
                result.append(byte)
            default:
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Header values are signed with their ends trimmed and inner runs of spaces made one.
    private static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}
