import Foundation
import Testing

@testable import BlackboxCollector

/// Signature V4 against the examples AWS publishes with the S3 API reference ("Signature
/// Calculations for the Authorization Header", examplebucket, 2013-05-24): a signature that differs
/// by one byte anywhere in the canonical request fails these.
@Suite("S3 request signing")
struct S3SignerTests {
    let signer = S3Signer(
        credentials: .init(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1")
    let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
    let host = ["host": "examplebucket.s3.amazonaws.com"]

    func signature(_ headers: [String: String]) -> String? {
        headers["authorization"]?.components(separatedBy: "Signature=").last
    }

    @Test("GET an object with a range")
    func getObject() {
        var headers = host
        headers["Range"] = "bytes=0-9"
        let signed = signer.sign(
            method: "GET", encodedPath: "/test.txt", query: [], headers: headers,
            payloadSHA256: S3Signer.emptyPayloadHash, at: date)
        #expect(
            signed["authorization"]
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(signed["x-amz-date"] == "20130524T000000Z")
        #expect(signed["x-amz-content-sha256"] == S3Signer.emptyPayloadHash)
    }

    @Test("PUT an object whose key needs encoding, with a Date header and a storage class")
    func putObject() {
        var headers = host
        headers["Date"] = "Fri, 24 May 2013 00:00:00 GMT"
        headers["x-amz-storage-class"] = "REDUCED_REDUNDANCY"
        let path = S3Signer.encodedPath("/test$file.text")
        #expect(path == "/test%24file.text")
        let signed = signer.sign(
            method: "PUT", encodedPath: path, query: [], headers: headers,
            payloadSHA256: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072", at: date)
        #expect(signature(signed) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test("query parameters: one without a value, and two sorted by name")
    func query() {
        let lifecycle = signer.sign(
            method: "GET", encodedPath: "/", query: [("lifecycle", "")], headers: host,
            payloadSHA256: S3Signer.emptyPayloadHash, at: date)
        #expect(signature(lifecycle) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        let list = signer.sign(
            method: "GET", encodedPath: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: host,
            payloadSHA256: S3Signer.emptyPayloadHash, at: date)
        #expect(signature(list) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
        #expect(S3Signer.canonicalQuery([("prefix", "J"), ("max-keys", "2")]) == "max-keys=2&prefix=J")
    }

    @Test("a session token is sent and signed")
    func sessionToken() {
        var withToken = signer.credentials
        withToken.sessionToken = "token/with+chars"
        let signed = S3Signer(credentials: withToken, region: "us-east-1").sign(
            method: "GET", encodedPath: "/test.txt", query: [], headers: host,
            payloadSHA256: S3Signer.emptyPayloadHash, at: date)
        #expect(signed["x-amz-security-token"] == "token/with+chars")
        #expect(signed["authorization"]?.contains("x-amz-date;x-amz-security-token,") == true)
    }

    @Test("encoding keeps only unreserved bytes (and / in paths)")
    func encoding() {
        #expect(S3Signer.encoded("a b+c/ü~._-") == "a%20b%2Bc%2F%C3%BC~._-")
        #expect(S3Signer.encodedPath("/a b/c=d") == "/a%20b/c%3Dd")
        #expect(S3Signer.timestamps(Date(timeIntervalSince1970: 1_764_377_045.9)) == ("20251129T004405Z", "20251129"))
    }
}
