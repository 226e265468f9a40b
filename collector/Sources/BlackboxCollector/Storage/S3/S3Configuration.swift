import Foundation

/// Where blobs live in an S3-compatible bucket and how to reach it: `--blob-url s3://bucket/prefix`
/// and the standard AWS variables, read as the AWS SDKs read them:
/// - `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`: a non-AWS endpoint (SeaweedFS, MinIO, R2, …);
///   without one, `https://s3.<region>.amazonaws.com`;
/// - `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (both required), `AWS_SESSION_TOKEN` (optional);
/// - `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`;
/// - `AWS_S3_USE_PATH_STYLE`: requests name the bucket in the path (`host/bucket/key`) for a custom
///   endpoint unless this is `false`, and in the host name (`bucket.host/key`) for AWS unless `true`.
struct S3Configuration: Sendable, Equatable {
    var bucket: String
    /// Empty, or ends with `/`: every object's key begins with it.
    var prefix: String
    /// `http` or `https`.
    var scheme: String
    var host: String
    var port: Int?
    var region: String
    var credentials: S3Signer.Credentials
    var pathStyle: Bool

    struct Invalid: Error, CustomStringConvertible, Equatable {
        var description: String
    }

    init(blobURL: String, environment: [String: String]) throws {
        guard blobURL.hasPrefix("s3://") else {
            throw Invalid(description: "--blob-url \(blobURL): expected s3://<bucket>[/<prefix>]")
        }
        let rest = blobURL.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        guard Self.isValidBucketName(bucket) else {
            throw Invalid(
                description:
                    "--blob-url \(blobURL): \"\(bucket)\" is not a bucket name (3-63 lowercase letters, digits, dots and hyphens)"
            )
        }
        self.bucket = bucket
        let path = rest.dropFirst(bucket.count).split(separator: "/").joined(separator: "/")
        guard path.utf8.count <= 512, !path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) else {
            throw Invalid(description: "--blob-url \(blobURL): the prefix must be a plain path of at most 512 bytes")
        }
        prefix = path.isEmpty ? "" : path + "/"

        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let accessKeyID = value("AWS_ACCESS_KEY_ID") else {
            throw Invalid(description: "--blob-url \(blobURL) needs AWS_ACCESS_KEY_ID (and AWS_SECRET_ACCESS_KEY)")
        }
        guard let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw Invalid(description: "--blob-url \(blobURL) needs AWS_SECRET_ACCESS_KEY")
        }
        credentials = .init(accessKeyID: accessKeyID, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"

        let custom = value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL")
        let endpoint = custom ?? "https://s3.\(region).amazonaws.com"
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
            components.path.isEmpty || components.path == "/", components.query == nil
        else {
            throw Invalid(description: "the S3 endpoint \(endpoint) is not an http(s)://host[:port] URL")
        }
        self.scheme = scheme
        self.host = host
        port = components.port
        switch value("AWS_S3_USE_PATH_STYLE")?.lowercased() {
        case "true": pathStyle = true
        case "false": pathStyle = false
        case nil: pathStyle = custom != nil
        case let other?:
            throw Invalid(description: "AWS_S3_USE_PATH_STYLE=\(other): expected true or false")
        }
        // A dotted bucket name in a host name breaks TLS's wildcard certificates.
        if !pathStyle, scheme == "https", bucket.contains(".") {
            throw Invalid(
                description: "bucket \(bucket) has dots, which virtual-host requests over https cannot name; "
                    + "set AWS_S3_USE_PATH_STYLE=true")
        }
    }

    /// S3's rules for names of new buckets (the strictest form, which every S3-compatible store accepts).
    static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last else { return false }
        func isLetterOrDigit(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        return isLetterOrDigit(first) && isLetterOrDigit(last)
            && bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
            && !name.contains("..")
    }

    /// `host[:port]` as the `Host` header and the signature name it.
    var hostHeader: String {
        let name = pathStyle ? host : "\(bucket).\(host)"
        let defaultPort = scheme == "https" ? 443 : 80
        return port.map { $0 == defaultPort ? name : "\(name):\($0)" } ?? name
    }

    /// The encoded path of an object (`key` is relative to the prefix), or of the bucket for nil.
    func encodedPath(key: String?) -> String {
        let objectPath = key.map { "/" + prefix + $0 } ?? "/"
        return S3Signer.encodedPath(pathStyle ? "/\(bucket)\(key == nil ? "" : objectPath)" : objectPath)
    }

    /// The request URL for an encoded path and its query.
    func url(encodedPath: String, query: [(name: String, value: String)]) -> String {
        let canonical = S3Signer.canonicalQuery(query)
        return "\(scheme)://\(hostHeader)\(encodedPath)\(canonical.isEmpty ? "" : "?" + canonical)"
    }
}
