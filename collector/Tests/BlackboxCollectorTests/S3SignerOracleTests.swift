import Foundation
import Testing

@testable import BlackboxCollector

/// Signature V4 against an oracle: botocore (the AWS SDK for Python's core, pinned in
/// scripts/python-peers.txt) signs the same requests the collector sends, for fixed keys and times, and
/// the `Authorization` headers must be equal byte for byte: listing with a continuation token, keys
/// that need encoding, a multipart part, the bucket in the host name, a custom port, a session token,
/// a server-side copy.
@Suite("S3 signing checked against botocore")
struct S3SignerOracleTests {
    struct Case: Codable {
        var method: String
        /// Unencoded: botocore encodes the path as the collector does.
        var host: String
        var path: String
        var query: [[String]]
        var headers: [String: String]
        var payloadSHA256: String
        var token: String?
        var region: String
    }

    /// Prints one `Authorization` value per case, in order.
    static let botocore = #"""
        import json, sys
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        from urllib.parse import quote
        timestamp = sys.argv[1]
        for case in json.loads(sys.argv[2]):
            credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", case.get("token"))
            auth = S3SigV4Auth(credentials, "s3", case["region"])
            query = "&".join(quote(name, safe="-_.~") + ("=" + quote(value, safe="-_.~") if value else "")
                             for name, value in case["query"])
            url = "http://" + case["host"] + quote(case["path"], safe="/~") + ("?" + query if query else "")
            request = AWSRequest(method=case["method"], url=url, headers=dict(case["headers"]), data=b"")
            request.context["timestamp"] = timestamp
            request.headers["X-Amz-Date"] = timestamp
            request.headers["X-Amz-Content-SHA256"] = case["payloadSHA256"]
            if case.get("token"):
                request.headers["X-Amz-Security-Token"] = case["token"]
            canonical = auth.canonical_request(request)
            signature = auth.signature(auth.string_to_sign(request, canonical), request)
            signed = auth.signed_headers(auth.headers_to_sign(request))
            scope = timestamp[:8] + "/" + case["region"] + "/s3/aws4_request"
            print("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" + scope + ",SignedHeaders=" + signed + ",Signature=" + signature)
        """#

    static let cases: [Case] = [
        Case(
            method: "GET", host: "127.0.0.1:8333", path: "/blobs",
            query: [
                ["list-type", "2"], ["prefix", "prod/blobs/"], ["max-keys", "1000"], ["encoding-type", "url"],
                ["continuation-token", "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="],
            ],
            headers: [:], payloadSHA256: S3Signer.emptyPayloadHash, token: nil, region: "us-east-1"),
        Case(
            method: "PUT", host: "crash-store.s3.eu-central-1.amazonaws.com", path: "/prod/ab/a b+c=ü~.zip",
            query: [], headers: [:], payloadSHA256: String(repeating: "ab", count: 32), token: nil,
            region: "eu-central-1"),
        Case(
            method: "PUT", host: "127.0.0.1:9000", path: "/blobs/prod/cd/large.zip",
            query: [["partNumber", "2"], ["uploadId", "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"]],
            headers: [:], payloadSHA256: String(repeating: "0f", count: 32), token: "FwoGZXIvYXdzEJr//////////wEaDH+/=",
            region: "us-west-2"),
        Case(
            method: "POST", host: "127.0.0.1:9000", path: "/blobs/prod/cd/large.zip", query: [["uploads", ""]],
            headers: [:], payloadSHA256: S3Signer.emptyPayloadHash, token: nil, region: "us-east-1"),
        Case(
            method: "PUT", host: "127.0.0.1:8333", path: "/blobs/prod/ab/x.zip.deleting-1f", query: [],
            headers: ["x-amz-copy-source": "/blobs/prod/ab/x.zip"], payloadSHA256: S3Signer.emptyPayloadHash,
            token: nil, region: "us-east-1"),
    ]

    @Test("the collector's Authorization header equals botocore's for every kind of request it sends")
    func equalToBotocore() async throws {
        let date = Date(timeIntervalSince1970: 1_796_000_523)
        let timestamp = S3Signer.timestamps(date).full
        let cases = String(decoding: try JSONEncoder().encode(Self.cases), as: UTF8.self)
        let result = try await PythonPeers.run(Self.botocore, [timestamp, cases])
        try #require(result.status == 0, "\(result.stderr)")
        let expected = result.stdout.split(separator: "\n").map(String.init)
        try #require(expected.count == Self.cases.count, "\(result.stdout)")
        for (test, oracle) in zip(Self.cases, expected) {
            let signer = S3Signer(
                credentials: .init(
                    accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    sessionToken: test.token),
                region: test.region)
            let signed = signer.sign(
                method: test.method, encodedPath: S3Signer.encodedPath(test.path),
                query: test.query.map { ($0[0], $0[1]) }, headers: test.headers.merging(["host": test.host]) { $1 },
                payloadSHA256: test.payloadSHA256, at: date)
            #expect(signed["authorization"] == oracle, "\(test.method) \(test.path)")
        }
    }
}
