import BlackboxCompression
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite struct GzipInflaterTests {
    /// Two gzip members back to back (what `cat a.gz b.gz` makes), by gzip(1).
    static func concatenatedMembers() throws -> (gz: [UInt8], text: String) {
        let directory = TemporaryDirectory()
        let first = (0..<2_000).map { "first member line \($0)\n" }.joined()
        let second = (0..<2_000).map { "second member line \($0)\n" }.joined()
        var gz: [UInt8] = []
        for (name, text) in [("a", first), ("b", second)] {
            try text.write(toFile: "\(directory.path)/\(name)", atomically: false, encoding: .utf8)
            let result = try runProgram("/bin/gzip", ["-k", "\(directory.path)/\(name)"])
            try #require(result.status == 0, "\(result.stderr)")
            gz += try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/\(name).gz")))
        }
        return (gz, first + second)
    }

    @Test("fed in pieces of any size, member boundaries included, it inflates what decompress does")
    func piecesInflateLikeTheWhole() throws {
        let (gz, text) = try Self.concatenatedMembers()
        #expect(try GzipData.decompress(gz, limit: 1 << 20) == Array(text.utf8))
        for pieceSize in [1, 7, 4096, gz.count] {
            let inflater = try GzipInflater()
            var output: [UInt8] = []
            for start in stride(from: 0, to: gz.count, by: pieceSize) {
                try gz[start..<min(start + pieceSize, gz.count)].withUnsafeBytes { piece in
                    try inflater.feed(piece) { output += $0 }
                }
            }
            #expect(output == Array(text.utf8), "pieces of \(pieceSize) bytes")
            #expect(inflater.atMemberEnd)
        }
    }

    @Test("a cut archive is not complete; decompress says so")
    func cutArchiveIsIncomplete() throws {
        let (gz, _) = try Self.concatenatedMembers()
        let cut = Array(gz.prefix(gz.count / 3))
        let inflater = try GzipInflater()
        try cut.withUnsafeBytes { try inflater.feed($0) { _ in } }
        #expect(!inflater.atMemberEnd)
        #expect(throws: GzipData.Failure.self) { try GzipData.decompress(cut, limit: 1 << 20) }
    }
}
