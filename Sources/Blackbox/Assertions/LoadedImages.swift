import CCrashHandler
@_spi(Internal) import Runtime

#if canImport(Glibc)
    import Glibc
#endif

/// The images of a captured stack, from the dynamic loader's list of the objects it has loaded.
///
/// Not `ImageMap.capture()`: on Linux that reads `/proc/self/maps`, then the first bytes of every
/// mapped file in place, looking for ELF headers; a file that another thread unmaps in between
/// faults the app (seen 2026-11-28: the library's test process crashed so while capturing an error's
/// stack, with tests mapping and unmapping files beside it). The loader's list holds loaded objects
/// only, and is read under its lock (`bbx_images_each`), so nothing read can go away meanwhile.
///
/// The Runtime module makes an `ImageMap` from outside data only by decoding its Compact ImageMap
/// Format (docs/CompactImageMapFormat.md in the Swift repository), so that is what this writes: one
/// `str` run per 63 bytes of path, no prefix compression (a few hundred bytes per capture).
enum LoadedImages {
    struct Image: Equatable {
        var base: UInt64
        var endOfText: UInt64
        var buildID: [UInt8]
        var path: String
    }

    /// The loaded objects, by base address.
    static func list() -> [Image] {
        var images: [Image] = []
        withUnsafeMutablePointer(to: &images) { pointer in
            bbx_images_each(
                { image, context in
                    guard let image = image?.pointee, let context, let path = image.path else { return }
                    let buildID =
                        image.build_id.map { Array(UnsafeBufferPointer(start: $0, count: image.build_id_length)) } ?? []
                    context.assumingMemoryBound(to: [LoadedImages.Image].self).pointee.append(
                        LoadedImages.Image(
                            base: UInt64(image.base), endOfText: UInt64(image.end_of_text), buildID: buildID,
                            path: LoadedImages.canonical(path)))
                }, pointer)
        }
        return images.sorted { $0.base < $1.base }
    }

    /// The path as the kernel names the file (`/proc/self/maps`, and so `ImageMap.capture()`): the
    /// loader's may hold `..` or a symbolic link (`/lib` for `/usr/lib`), as its search path had them.
    fileprivate static func canonical(_ path: UnsafePointer<CChar>) -> String {
        guard let resolved = realpath(path, nil) else { return String(cString: path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The loaded objects as the Runtime module's image map; nil if it refused the encoding.
    static func capture() -> ImageMap? {
        ImageMap(compactImageMapData: compactImageMap(list()))
    }

    /// `images` in Compact ImageMap Format, version 0, 64-bit words. Swift 6.3's decoder reads the
    /// platform's name (a count and its bytes) between the information byte and the image count, as
    /// its own encoder writes it; the format's document does not say so.
    static func compactImageMap(_ images: [Image]) -> [UInt8] {
        let encodable = images.filter {
            $0.endOfText >= $0.base && bytes($0.base) <= 8 && bytes($0.endOfText - $0.base) <= 8
        }
        var out: [UInt8] = [0b0000_0010]
        appendCount(platform.utf8.count, to: &out)
        out += platform.utf8
        appendCount(encodable.count, to: &out)
        for image in encodable {
            let offset = image.endOfText - image.base
            let (baseBytes, offsetBytes) = (bytes(image.base), bytes(offset))
            out.append(UInt8((baseBytes - 1) << 3 | (offsetBytes - 1)))
            appendBigEndian(image.base, bytes: baseBytes, to: &out)
            appendBigEndian(offset, bytes: offsetBytes, to: &out)
            appendCount(image.buildID.count, to: &out)
            out += image.buildID
            var path = image.path.utf8[...]
            while !path.isEmpty {
                let run = path.prefix(63)
                out.append(UInt8(run.count))
                out += run
                path = path.dropFirst(run.count)
            }
            out.append(0)
        }
        return out
    }

    /// As the Runtime module names it: `Linux (<the distribution's PRETTY_NAME>)`.
    static let platform = "Linux (\(CrashCapture.operatingSystemName()))"

    /// Bytes of `value`, most significant first, with the first byte's top bit clear (the decoder
    /// sign-extends it).
    static func bytes(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount) / 8 + 1
    }

    private static func appendBigEndian(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for index in stride(from: bytes - 1, through: 0, by: -1) {
            out.append(index < 8 ? UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) : 0)
        }
    }

    /// Seven bits a byte, most significant first, the top bit set on all but the last.
    private static func appendCount(_ count: Int, to out: inout [UInt8]) {
        var groups: [UInt8] = [UInt8(count & 0x7f)]
        var rest = count >> 7
        while rest > 0 {
            groups.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        out += groups.reversed()
    }
}
