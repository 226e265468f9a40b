import BlackboxSentry
import Testing

@Suite("Sentry's debug id of a build-id")
struct SentryDebugIDTests {
    @Test("the first 16 bytes as a GUID with little-endian fields, as sentry-cli prints it")
    func debugID() {
        // `sentry-cli debug-files check` on the debug crash child printed this pair.
        #expect(
            SentryEvent.Image.debugID(ofBuildID: "d534f27c9941545182c37e4bb8f08be27bb4a2dc")
                == "7cf234d5-4199-5154-82c3-7e4bb8f08be2")
        #expect(
            SentryEvent.Image.debugID(ofBuildID: "abcd") == "0000cdab-0000-0000-0000-000000000000",
            "short ids are padded")
        #expect(
            SentryEvent.Image.debugID(ofBuildID: "ABCD") == nil && SentryEvent.Image.debugID(ofBuildID: "abc") == nil)
    }
}
