import BlackboxCompression
import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite("Gzip in memory")
struct GzipTests {
    @Test("zlib CRC-32: the standard check value, and the same result fed in pieces")
    func crc32() {
        let bytes = Array("123456789".utf8)
        let whole = bytes.withUnsafeBytes { ZlibCRC32.update(0, with: $0) }
        #expect(whole == 0xCBF4_3926)
        let pieces = bytes[..<4].withUnsafeBytes { first in
            bytes[4...].withUnsafeBytes { ZlibCRC32.update(ZlibCRC32.update(0, with: first), with: $0) }
        }
        #expect(pieces == whole)
        #expect(ZlibCRC32.update(7, with: UnsafeRawBufferPointer(start: nil, count: 0)) == 7)
    }

    @Test("concatenated members inflate one after the other; a limit stops a bomb")
    func decompress() throws {
        let scratch = TemporaryDirectory(prefix: "gzip")
        defer { scratch.remove() }
        let directory = scratch.path
        var joined: [UInt8] = []
        for (index, text) in ["first\n", String(repeating: "second\n", count: 1000)].enumerated() {
            let path = "\(directory)/\(index)"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try Gzip.compress(path, to: path + ".gz")
            joined += try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + ".gz")))
        }
        let text = String(decoding: try GzipData.decompress(joined, limit: 1 << 20), as: UTF8.self)
        #expect(text == "first\n" + String(repeating: "second\n", count: 1000))
        #expect(throws: GzipData.Failure.self) { try GzipData.decompress(joined, limit: 100) }
    }
}
