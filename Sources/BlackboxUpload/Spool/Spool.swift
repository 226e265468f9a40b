#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxSystem
    import Foundation

    /// Bundles waiting for upload, in a directory that survives restarts:
    /// ```
    /// <spool>/<bundle-id>.zip          waiting; the file name is the Upload-Id, so a resend after a
    ///                                  crash or a restart is recognized by the collector
    /// <spool>/<bundle-id>.zip.tmp      being written (a crash left it: removed)
    /// <rejected>/<bundle-id>.zip       refused for good (400/413/422): kept for a person to look at
    /// <rejected>/<bundle-id>.json      the collector's answer and when it came
    /// ```
    /// For an app these are `<dir>/outbox/bundles/` and `<dir>/outbox/rejected/` (docs/layout.md). The
    /// Sentry delivery's spool holds envelopes the same way: `<dir>/outbox/sentry/<id>.envelope`.
    public struct Spool: Sendable {
        public let directory: String
        public let rejectedDirectory: String
        /// What the waiting files end with: `zip` (bundles) or `envelope` (Sentry envelopes).
        public let fileExtension: String

        public init(directory: String, rejectedDirectory: String, fileExtension: String = "zip") {
            self.directory = directory
            self.rejectedDirectory = rejectedDirectory
            self.fileExtension = fileExtension
        }

        /// The bundle spool of an app's diagnostics directory.
        public init(diagnosticsDirectory: String) {
            let layout = DiagnosticsDirectory(diagnosticsDirectory)
            self.init(directory: layout.spool, rejectedDirectory: layout.rejected)
        }

        /// The Sentry envelope spool of an app's diagnostics directory.
        public static func sentry(diagnosticsDirectory: String) -> Spool {
            let layout = DiagnosticsDirectory(diagnosticsDirectory)
            return Spool(directory: layout.sentrySpool, rejectedDirectory: layout.rejected, fileExtension: "envelope")
        }

        private var suffix: String { "." + fileExtension }

        public struct Bundle: Sendable, Equatable {
            public var path: String
            public var id: UUID
            public var size: Int64
        }

        /// Waiting bundles, oldest first. Leftover temporary files are removed on the way.
        public func pending() -> [Bundle] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            var found: [(modified: Date, bundle: Bundle)] = []
            for name in names {
                let path = "\(directory)/\(name)"
                if name.hasSuffix(suffix + ".tmp") {
                    unlink(path)
                    continue
                }
                guard name.hasSuffix(suffix), let id = UUID(uuidString: String(name.dropLast(suffix.count))),
                    let attributes = try? FileManager.default.attributesOfItem(atPath: path)
                else { continue }
                let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
                let modified = attributes[.modificationDate] as? Date ?? .distantPast
                found.append((modified, Bundle(path: path, id: id, size: size)))
            }
            return found.sorted { ($0.modified, $0.bundle.path) < ($1.modified, $1.bundle.path) }.map(\.bundle)
        }

        /// After a 2xx: the collector has it durably.
        public func uploaded(_ bundle: Bundle) {
            unlink(bundle.path)
        }

        /// After a final refusal: moved aside with the reason, never resent.
        public func reject(_ bundle: Bundle, answer: ServerAnswer) throws(BundleError) {
            do {
                try FileManager.default.createDirectory(
                    atPath: rejectedDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw BundleError(path: rejectedDirectory, reason: "cannot create (\(error.localizedDescription))")
            }
            let base = "\(rejectedDirectory)/\(bundle.id.uuidString.lowercased())"
            let record = Rejection(answer: answer, rejectedAt: Date(), size: bundle.size)
            do {
                let json = try Rejection.encoder.encode(record)
                try DurableFile.write(Array(json), to: base + ".json")
            } catch {
                throw BundleError(path: base + ".json", reason: "\(error)")
            }
            guard rename(bundle.path, base + suffix) == 0 else {
                throw BundleError(
                    path: bundle.path,
                    reason: "cannot move to \(rejectedDirectory): \(errnoDescription())")
            }
            DurableFile.syncDirectory(containing: base + suffix)
        }

        /// Files of this spool the server refused, with its reasons.
        public func rejected() -> [(path: String, rejection: Rejection)] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: rejectedDirectory)) ?? []
            return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
                let json = "\(rejectedDirectory)/\(name)"
                let path = String(json.dropLast(5)) + suffix
                guard FileManager.default.fileExists(atPath: path),
                    let data = FileManager.default.contents(atPath: json),
                    let rejection = try? JSONDecoder.rejections.decode(Rejection.self, from: data)
                else { return nil }
                return (path, rejection)
            }
        }

        public struct Rejection: Codable, Sendable, Equatable {
            public var answer: ServerAnswer
            public var rejectedAt: Date
            public var size: Int64

            static var encoder: JSONEncoder {
                let encoder = JSONEncoder()
                encoder.dateEncodingStrategy = .iso8601
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                return encoder
            }
        }
    }

    extension JSONDecoder {
        static var rejections: JSONDecoder {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return decoder
        }
    }
#endif
