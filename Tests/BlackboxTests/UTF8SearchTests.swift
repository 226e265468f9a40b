import BlackboxFormat
import BlackboxTestSupport
import Testing

/// `UTF8Search` finds what the standard library's Character search finds, for ASCII needles in text
/// that is not ASCII, in strings and in slices of them.
@Suite struct UTF8SearchTests {
    static let pieces = ["closure #", "1", " in ", "é", "e\u{301}", "😀", "/checkouts/", "<", ">", " ", "a", "日本"]
    static let needles = ["closure #", " in ", "/checkouts/", "<", "a a", "1 ", "#1", "x"]

    @Test func findsWhatFirstRangeFinds() {
        var random = SplitMix64(seed: 5)
        for _ in 0..<2000 {
            let text = (0..<Int(random.next() % 8)).map { _ in
                Self.pieces[Int(random.next() % UInt64(Self.pieces.count))]
            }
            .joined()
            let needle = Self.needles[Int(random.next() % UInt64(Self.needles.count))]
            #expect(UTF8Search.firstRange(of: needle, in: text) == text.firstRange(of: needle), "\(needle) in \(text)")
            let slice = text.dropFirst(Int(random.next() % 3))
            #expect(
                UTF8Search.firstRange(of: needle, in: slice) == slice.firstRange(of: needle), "\(needle) in \(slice)")
            #expect(UTF8Search.contains(needle, in: text) == text.contains(needle))
        }
    }

    @Test func edges() {
        #expect(UTF8Search.firstRange(of: "", in: "abc") == "abc".startIndex..<"abc".startIndex)
        #expect(UTF8Search.firstRange(of: "abcd", in: "abc") == nil)
        #expect(UTF8Search.contains("abc", in: "xxabc"))
        #expect(!UTF8Search.contains("abd", in: "abcabcab"))
        let json = Array(#"{"a":"x\u0000"}"#.utf8)
        #expect(json.withUnsafeBytes { UTF8Search.contains(#"\u0000"#, inBytes: $0) })
        #expect(!json.withUnsafeBytes { UTF8Search.contains(#"\u0001"#, inBytes: $0) })
        #expect(![UInt8]().withUnsafeBytes { UTF8Search.contains("a", inBytes: $0) })
    }
}
