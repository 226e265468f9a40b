#if Upload
    import BlackboxFormat
    import BlackboxTestSupport
    import Crypto
    import Foundation
    import Testing
    import ZIPFoundation

    @testable import BlackboxUpload

    @Suite struct BundleWriterTests {
        /// Every entry of a written zip, inflated.
        static func contents(of path: String) throws -> [String: Data] {
            let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
            var result: [String: Data] = [:]
            for entry in archive {
                var data = Data()
                _ = try archive.extract(entry, consumer: { data.append($0) })
                result[entry.path] = data
            }
            return result
        }

        @Test func manifestListsEveryEntryWithItsTrueSizeAndDigest() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let report = scratch.write("in/crash-1.json", "{\"a\":1}")
            let log = scratch.write("in/app.log", "line one\nline two\nline three\n")
            let gz = scratch.write("in/app.old.log.gz", Data([0x1F, 0x8B, 8, 0, 1, 2, 3]))
            let items = [
                BundleItem(sourcePath: report, entryPath: "reports/crash-1.json", kind: .report, range: 0..<7),
                // A byte range: the second and third lines only.
                BundleItem(sourcePath: log, entryPath: "logs/app.log", kind: .log, range: 9..<29),
                BundleItem(sourcePath: gz, entryPath: "logs/app.old.log.gz", kind: .log, range: 0..<7),
            ]
            let writer = BundleWriter(app: .init(name: "shop", version: "1.2"), host: "web-1")
            let written = try writer.write(items, into: scratch.path + "/spool")
            #expect(written.count == 1)
            let bundle = try #require(written.first)
            #expect(bundle.path == "\(scratch.path)/spool/\(bundle.id.uuidString.lowercased()).zip")
            #expect(scratch.files(in: "spool") == ["\(bundle.id.uuidString.lowercased()).zip"])

            let entries = try Self.contents(of: bundle.path)
            #expect(String(decoding: try #require(entries["logs/app.log"]), as: UTF8.self) == "line two\nline three\n")
            let manifest = try BundleManifest.decode(try #require(entries["manifest.json"]))
            #expect(manifest.bundleID == bundle.id)
            #expect(manifest.app.name == "shop")
            #expect(manifest.entries.map(\.path) == ["reports/crash-1.json", "logs/app.log", "logs/app.old.log.gz"])
            for entry in manifest.entries {
                let data = try #require(entries[entry.path])
                #expect(entry.size == Int64(data.count))
                #expect(entry.sha256 == lowercaseHex(SHA256.hash(data: data)))
            }
            // Already compressed files are stored, not deflated again.
            let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
            #expect(archive["logs/app.old.log.gz"]?.type == .file)
            #expect(archive["logs/app.old.log.gz"].map { $0.compressedSize == $0.uncompressedSize } == true)
        }

        @Test func contentOverTheLimitIsSplitAndAnOversizedItemTravelsAlone() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let items = (0..<5).map { index in
                let size = index == 2 ? 5_000 : 400
                let path = scratch.write("in/\(index).log", String(repeating: "x", count: size))
                return BundleItem(sourcePath: path, entryPath: "logs/\(index).log", kind: .log, range: 0..<Int64(size))
            }
            var writer = BundleWriter(app: .init(name: "shop"), host: "h")
            writer.maxBundleBytes = 1_000
            let written = try writer.write(items, into: scratch.path + "/spool")
            #expect(
                written.map { $0.manifest.entries.map(\.path) } == [
                    ["logs/0.log", "logs/1.log"], ["logs/2.log"], ["logs/3.log", "logs/4.log"],
                ])
            #expect(Set(written.map(\.id)).count == 3)
        }

        @Test func aFileThatShrankFailsTheBundleAndLeavesNoPartialZip() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let log = scratch.write("in/app.log", "short\n")
            let item = BundleItem(sourcePath: log, entryPath: "logs/app.log", kind: .log, range: 0..<100)
            let writer = BundleWriter(app: .init(name: "shop"), host: "h")
            #expect(throws: BundleError.self) { try writer.write([item], into: scratch.path + "/spool") }
            #expect(scratch.files(in: "spool").isEmpty)
        }

        @Test func uploadIDIsTheManifestsBundleIDOrStableFromTheContent() throws {
            let scratch = TemporaryDirectory()
            defer { scratch.remove() }
            let log = scratch.write("in/app.log", "hello\n")
            let bundle = try #require(
                try BundleWriter(app: .init(name: "shop"), host: "h").write(
                    [BundleItem(sourcePath: log, entryPath: "logs/app.log", kind: .log, range: 0..<6)],
                    into: scratch.path + "/spool"
                ).first)
            #expect(try BundleIdentity.uploadID(forZipAt: bundle.path) == bundle.id)

            let plain = scratch.write("plain.zip", Data("PK\u{5}\u{6}".utf8) + Data(count: 18))
            let first = try BundleIdentity.uploadID(forZipAt: plain)
            #expect(try BundleIdentity.uploadID(forZipAt: plain) == first)
            let other = scratch.write("other.zip", Data("PK\u{5}\u{6}x".utf8) + Data(count: 17))
            #expect(try BundleIdentity.uploadID(forZipAt: other) != first)
        }
    }
#endif
