import BlackboxSymbols
import Foundation
import ZIPFoundation

/// A source bundle: the sources a build's debug info names, in sentry-cli's layout (symbolic's
/// `SourceBundle`: an 8-byte `SYSB` header, then a zip of `manifest.json` and `files/…`; `blackbox
/// symbols upload --sources` writes the zip without the header). Stored as a symbol file of its
/// build-id (`SymbolFile.hasSources`), served on debuginfod's `source` route and read for the report
/// page's source context (`SourceContexts`).
///
/// Everything in it is the uploader's: the manifest is read within `maxManifestBytes` and
/// `maxFiles`, an entry within `maxSourceBytes` (a zip's sizes are claims; the extraction counts
/// what it inflates), and a file is found by the absolute path the manifest gives it, never by an
/// entry name used as a path.
struct SourceBundle {
    static let maxManifestBytes = 16 << 20
    static let maxFiles = 100_000
    /// A source file larger than this is not served or shown.
    static let maxSourceBytes = 4 << 20

    struct Manifest: Decodable {
        struct File: Decodable {
            var type: String?
            var path: String?
        }
        var files: [String: File]
        var codeID: String?
        var debugID: String?

        enum CodingKeys: String, CodingKey {
            case files
            case codeID = "code_id"
            case debugID = "debug_id"
        }
    }

    enum Failure: Error, Equatable, CustomStringConvertible {
        case notABundle(String)
        case tooLarge(String)

        var description: String {
            switch self {
            case .notABundle(let reason): "not a source bundle: \(reason)"
            case .tooLarge(let path): "\(path) is larger than \(SourceBundle.maxSourceBytes) bytes"
            }
        }
    }

    let manifest: Manifest
    private let archive: Archive
    /// Entry names by the absolute path of the source they hold.
    private let entries: [String: String]

    /// Whether the file starts as a source bundle does (`SYSB`, or a zip's local header).
    static func looksLikeOne(path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 4)) ?? Data()
        return head == Data("SYSB".utf8) || head == Data([0x50, 0x4B, 0x03, 0x04])
    }

    init(path: String) throws(Failure) {
        // ZIPFoundation given a directory never returns.
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw .notABundle("not a file") }
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw .notABundle("not a zip archive")
        }
        guard let entry = archive["manifest.json"] else { throw .notABundle("no manifest.json") }
        guard entry.uncompressedSize <= Int64(Self.maxManifestBytes) else {
            throw .notABundle("manifest.json is larger than \(Self.maxManifestBytes) bytes")
        }
        var json = Data()
        do {
            _ = try archive.extract(entry, bufferSize: 64 << 10, skipCRC32: false) { chunk in
                json.append(chunk)
                if json.count > Self.maxManifestBytes { throw Failure.tooLarge("manifest.json") }
            }
            manifest = try JSONDecoder().decode(Manifest.self, from: json)
        } catch {
            throw .notABundle("manifest.json is not a source bundle's manifest (\(error))")
        }
        guard manifest.files.count <= Self.maxFiles else {
            throw .notABundle("more than \(Self.maxFiles) files")
        }
        var entries: [String: String] = [:]
        for (name, file) in manifest.files where file.type ?? "source" == "source" {
            if let path = file.path, path.hasPrefix("/") { entries[path] = name }
        }
        self.entries = entries
    }

    /// The build-id the manifest names (`code_id`, an ELF build-id in hex), lowercased; nil without one.
    var buildID: String? {
        manifest.codeID.map { $0.lowercased() }.flatMap { ELFBuildID.isValid($0) ? $0 : nil }
    }

    var sourceCount: Int { entries.count }

    /// The source file the debug info names `path`; nil when the bundle has none by that path.
    func source(at path: String) throws(Failure) -> Data? {
        guard let name = entries[path], let entry = archive[name] else { return nil }
        guard entry.uncompressedSize <= Int64(Self.maxSourceBytes) else { throw .tooLarge(path) }
        var contents = Data()
        do {
            _ = try archive.extract(entry, bufferSize: 64 << 10, skipCRC32: false) { chunk in
                contents.append(chunk)
                if contents.count > Self.maxSourceBytes { throw Failure.tooLarge(path) }
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .notABundle("\(name) cannot be read (\(error))")
        }
        return contents
    }
}
