import BlackboxSymbols
import BlackboxTestSupport
import Foundation
@_spi(Internal) import Runtime
import Synchronization
import Testing

@testable import Blackbox

#if canImport(Glibc)
    import Glibc
#endif

/// The images of a captured error's stack come from the dynamic loader, not from the Runtime
/// module's `ImageMap.capture()`, which reads every mapped file's first bytes in place and faults when
/// another thread unmaps one meanwhile: a 20-line program capturing 3,000 times beside a thread that
/// maps and unmaps a file crashed with SIGSEGV in 3 runs of 3 (2026-11-28, Swift 6.3.1).
@Suite("Loaded images")
struct LoadedImagesTests {
    @Test("the list is the loader's: mapped where it says, build ids as the files on disk have them")
    func matchesTheProcess() throws {
        let images = LoadedImages.list()
        // Read to its end: /proc files say they are empty.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try handle.close()
        var starts: [String: Set<UInt64>] = [:]
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6,
                let start = fields[0].split(separator: "-").first.flatMap({ UInt64($0, radix: 16) })
            else { continue }
            starts[String(fields[5]), default: []].insert(start)
        }
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(images.contains { $0.path == executable }, "the main executable, by the kernel's path")
        #expect(images.contains { $0.path.hasSuffix("/libswiftCore.so") })
        #expect(images.map(\.base) == images.map(\.base).sorted())
        for image in images {
            #expect(starts[image.path]?.contains(image.base) == true, "\(image.path) at \(image.base)")
            #expect(image.endOfText > image.base)
            let onDisk = ELFBuildID.read(path: image.path)
            #expect(
                image.buildID.isEmpty ? onDisk == nil : onDisk == image.buildID.map(hexByte).joined(), "\(image.path)")
        }
    }

    @Test("the Runtime module decodes what is written, for every image as it was")
    func roundTrip() throws {
        var images = LoadedImages.list()
        // Beside the real ones: a path of many 63-byte runs, addresses whose first byte has its top bit
        // set (a byte more, or they would read as negative), no build id, and more images than one
        // count byte holds.
        images.append(
            .init(
                base: 0x80_0000_0000, endOfText: 0x80_0000_0000 + 0x80, buildID: [],
                path: "/" + String(repeating: "deep/", count: 40) + "libplugin.so"))
        for index in 0..<150 {
            images.append(
                .init(
                    base: 0x7f00_0000_0000 + UInt64(index) << 20,
                    endOfText: 0x7f00_0000_0000 + UInt64(index) << 20 + 0x1000,
                    buildID: [UInt8(index), 0xab], path: "/opt/app/lib\(index).so"))
        }
        images.sort { $0.base < $1.base }
        let map = try #require(ImageMap(compactImageMapData: LoadedImages.compactImageMap(images)))
        #expect(map.count == images.count)
        for (decoded, image) in zip(map, images) {
            #expect(decoded.path == image.path)
            #expect(decoded.name == String(image.path.split(separator: "/").last ?? ""))
            #expect(UInt64(decoded.baseAddress) == image.base)
            #expect(UInt64(decoded.endOfText) == image.endOfText)
            #expect((decoded.uniqueID ?? []) == image.buildID)
        }
        #expect(LoadedImages.bytes(0) == 1 && LoadedImages.bytes(0x7f) == 1 && LoadedImages.bytes(0x80) == 2)
        #expect(LoadedImages.bytes(UInt64.max) == 9, "not encodable: such an image is left out")
    }

    @Test("capturing stacks while another thread maps and unmaps a file never faults")
    func captureBesideUnmapping() throws {
        let scratch = TemporaryDirectory(prefix: "loaded-images")
        defer { scratch.remove() }
        let path = "\(scratch.path)/data"
        try Data(repeating: 7, count: 65_536).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        final class Flag: Sendable { let raised = Atomic<Bool>(false) }
        let stop = Flag()
        let mapper = Thread {
            while !stop.raised.load(ordering: .relaxed) {
                let mapping = mmap(nil, 65_536, PROT_READ, MAP_PRIVATE, descriptor, 0)
                if mapping != MAP_FAILED { munmap(mapping, 65_536) }
            }
        }
        mapper.start()
        defer { stop.raised.store(true, ordering: .relaxed) }
        var captured = 0
        for _ in 0..<3_000 {
            if let stack = CapturedStack.capture(), !stack.unnamedFrames.isEmpty { captured += 1 }
        }
        #expect(captured == 3_000)
    }

    private func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}
