import Foundation
import Testing

@testable import BlackboxCollector

@Suite("S3 configuration")
struct S3ConfigurationTests {
    let keys = ["AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"]

    func configuration(_ url: String, _ extra: [String: String] = [:]) throws -> S3Configuration {
        try S3Configuration(blobURL: url, environment: keys.merging(extra) { $1 })
    }

    func refusal(_ url: String, _ environment: [String: String]) -> String? {
        do {
            _ = try S3Configuration(blobURL: url, environment: environment)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("AWS by default: the region's endpoint, the bucket in the host name, us-east-1")
    func awsDefaults() throws {
        let aws = try configuration("s3://crash-store/blackbox/prod/")
        #expect(aws.bucket == "crash-store")
        #expect(aws.prefix == "blackbox/prod/")
        #expect(aws.region == "us-east-1")
        #expect(!aws.pathStyle)
        #expect(aws.hostHeader == "crash-store.s3.us-east-1.amazonaws.com")
        #expect(
            aws.url(encodedPath: aws.encodedPath(key: "ab/ab12.zip"), query: [])
                == "https://crash-store.s3.us-east-1.amazonaws.com/blackbox/prod/ab/ab12.zip")
        let frankfurt = try configuration("s3://crash-store", ["AWS_DEFAULT_REGION": "eu-central-1"])
        #expect(frankfurt.hostHeader == "crash-store.s3.eu-central-1.amazonaws.com")
        #expect(frankfurt.prefix == "")
        #expect(
            try configuration("s3://b-1", ["AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "x"]).region == "eu-west-1")
    }

    @Test("a custom endpoint: path style unless told otherwise, its port kept, S3's own variable first")
    func customEndpoint() throws {
        let local = try configuration("s3://blobs/p", ["AWS_ENDPOINT_URL": "http://127.0.0.1:8333"])
        #expect(local.pathStyle)
        #expect(local.hostHeader == "127.0.0.1:8333")
        #expect(local.encodedPath(key: "ab/x y.zip") == "/blobs/p/ab/x%20y.zip")
        #expect(local.encodedPath(key: nil) == "/blobs")
        #expect(
            local.url(encodedPath: local.encodedPath(key: nil), query: [("prefix", "p/"), ("list-type", "2")])
                == "http://127.0.0.1:8333/blobs?list-type=2&prefix=p%2F")
        let s3First = try configuration(
            "s3://blobs",
            [
                "AWS_ENDPOINT_URL": "http://other:1", "AWS_ENDPOINT_URL_S3": "https://r2.example:443",
                "AWS_S3_USE_PATH_STYLE": "false",
            ])
        #expect(!s3First.pathStyle)
        #expect(s3First.hostHeader == "blobs.r2.example")
        #expect(s3First.encodedPath(key: "k") == "/k")
    }

    @Test("refused with the reason: a missing key, a bad bucket or prefix, an odd endpoint")
    func refusals() {
        #expect(refusal("s3://blobs", [:])?.contains("AWS_ACCESS_KEY_ID") == true)
        #expect(refusal("s3://blobs", ["AWS_ACCESS_KEY_ID": "id"])?.contains("AWS_SECRET_ACCESS_KEY") == true)
        #expect(refusal("/var/blobs", keys)?.contains("expected s3://") == true)
        for bucket in ["UPPER", "a", "-lead", "trail-", "two..dots", "under_score", String(repeating: "b", count: 64)] {
            #expect(refusal("s3://\(bucket)/p", keys)?.contains("not a bucket name") == true, "\(bucket)")
        }
        #expect(refusal("s3://blobs/a/../b", keys)?.contains("plain path") == true)
        #expect(
            refusal("s3://blobs", keys.merging(["AWS_ENDPOINT_URL": "ftp://host"]) { $1 })?.contains("not an http(s)")
                == true)
        #expect(
            refusal("s3://blobs", keys.merging(["AWS_ENDPOINT_URL": "http://host/path"]) { $1 })?.contains(
                "not an http(s)")
                == true)
        #expect(
            refusal("s3://blobs", keys.merging(["AWS_S3_USE_PATH_STYLE": "yes"]) { $1 })?.contains("true or false")
                == true)
        #expect(refusal("s3://my.blobs", keys)?.contains("AWS_S3_USE_PATH_STYLE=true") == true)
    }
}
