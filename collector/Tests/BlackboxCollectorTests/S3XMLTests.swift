import Foundation
import Testing

@testable import BlackboxCollector

@Suite("S3 answers' XML")
struct S3XMLTests {
    @Test("a ListObjectsV2 page: the root's attributes skipped, entries and flags read")
    func listPage() throws {
        let xml = try S3XML.parse(
            Data(
                """
                <?xml version="1.0" encoding="UTF-8"?>
                <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>blobs</Name>
                  <Prefix>p/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>
                  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
                  <Contents><Key>p/ab/ab1.zip</Key><Size>10240</Size><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></Contents>
                  <Contents><Key>p/cd/a%20b.envelope</Key><Size>7</Size><StorageClass/></Contents>
                </ListBucketResult>
                """.utf8))
        #expect(xml.name == "ListBucketResult")
        #expect(xml.text("IsTruncated") == "true")
        #expect(xml.text("NextContinuationToken") == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
        let entries = xml.children("Contents")
        #expect(entries.map { $0.text("Key") } == ["p/ab/ab1.zip", "p/cd/a%20b.envelope"])
        #expect(entries.map { $0.text("Size") } == ["10240", "7"])
        #expect(entries[0].text("ETag") == "\"9b2cf535f27731c974343645a3985328\"")
        #expect(entries[1].text("StorageClass") == "")
    }

    @Test("an error answer, with entities, numeric references and CDATA")
    func errorAnswer() throws {
        let xml = try S3XML.parse(
            Data(
                """
                <Error><Code>SignatureDoesNotMatch</Code><Message>a &lt;b&gt; &amp; &#39;c&#x27; <![CDATA[<raw>]]></Message>
                <!-- a comment --><RequestId>4442587FB7D0A2F9</RequestId></Error>
                """.utf8))
        #expect(xml.text("Code") == "SignatureDoesNotMatch")
        #expect(xml.text("Message") == "a <b> & 'c' <raw>")
    }

    @Test("refused: a document type, nesting past the bound, a mismatched or missing end, unknown entities")
    func refusals() {
        let hostile = [
            "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><Error>&a;</Error>",
            String(repeating: "<a>", count: S3XML.maxDepth + 1) + String(repeating: "</a>", count: S3XML.maxDepth + 1),
            "<Error><Code>x</Error>", "<Error>", "<Error>&bogus;</Error>", "<Error>&#xFFFFFFFF;</Error>",
            "<Error/>trailing", "", "plain text",
        ]
        for text in hostile {
            #expect(throws: S3XML.ParseError.self, "\(text.prefix(40))") { try S3XML.parse(Data(text.utf8)) }
        }
    }
}
