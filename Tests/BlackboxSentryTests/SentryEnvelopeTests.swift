import BlackboxSentry
import Foundation
import Testing

/// The one envelope type both sides use: what an app's delivery writes, the collector reads back
/// item for item (before, each side had its own type and the two were never held to each other).
@Suite("Sentry protocol: the envelope and the DSN, written and read by the same types")
struct SentryEnvelopeTests {
    @Test("an envelope written is read back with the same header and items")
    func roundTrip() throws {
        let sdk = SentryEnvelope.SDK(name: "blackbox.swift", version: "1.0")
        let written = SentryEnvelope(
            eventID: "9ec79c33ec9942ab8353589fcb2e04dc", sdk: sdk,
            items: [
                .init(type: "event", payload: Data(#"{"message":"hi\nthere"}"#.utf8), contentType: "application/json"),
                .init(type: "attachment", payload: Data("line 1\nline 2\n".utf8), filename: "blackbox.log"),
                .init(type: "log", payload: Data(#"{"items":[]}"#.utf8), itemCount: 0),
                .init(type: "sessions", payload: Data()),
            ])
        let read = try SentryEnvelope(parsing: Data(try written.encoded()))
        #expect(read == written)
        #expect(read.items[1].header.attachmentType == "event.attachment")
        #expect(read.items.map(\.header.length) == written.items.map { Int64($0.payload.count) })
        #expect(SentryEnvelope.itemTypes(of: try written.encoded()) == ["event", "attachment", "log", "sessions"])
    }

    @Test("header fields of another shape are left out, never an error; unknown fields are ignored")
    func lenientHeaders() throws {
        let text = """
            {"event_id":42,"dsn":"http://k@h/1","sent_at":"2026-11-28T00:00:00Z","sdk":"not an object"}
            {"type":"event","length":"2","filename":7,"item_count":"many","platform":"python"}
            {}
            """
        let envelope = try SentryEnvelope(parsing: Data(text.utf8))
        #expect(envelope.eventID == nil && envelope.dsn == "http://k@h/1" && envelope.header.sdk == nil)
        #expect(envelope.items.count == 1)
        #expect(envelope.items.first?.header == .init(type: "event", length: 2))
        #expect(SentryEnvelope.header(ofFirstLine: Data(#"{"dsn":"http://k@h/1"}"#.utf8))?.dsn == "http://k@h/1")
        #expect(SentryEnvelope.header(ofFirstLine: Data("[1]".utf8)) == nil)
    }

    @Test("a DSN made for a server and key parses back to them")
    func dsnForAServer() throws {
        for (server, expected) in [
            ("http://127.0.0.1:8080", "http://key_1-x@127.0.0.1:8080/7"),
            ("https://bb.example.com/collector/", "https://key_1-x@bb.example.com/collector/7"),
            ("http://[::1]:9000", "http://key_1-x@[::1]:9000/7"),
        ] {
            let made = try #require(SentryDSN(serverURL: server, publicKey: "key_1-x", projectID: 7), "\(server)")
            #expect(made.description == expected)
            let parsed = try SentryDSN(made.description)
            #expect(parsed == made && parsed.numericProjectID == 7 && parsed.publicKey == "key_1-x")
        }
        #expect(SentryDSN(serverURL: "not a url", publicKey: "k", projectID: 1) == nil)
    }
}
