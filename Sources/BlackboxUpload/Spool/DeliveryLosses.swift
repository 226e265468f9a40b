#if Upload
    import Blackbox
    import BlackboxFormat
    import BlackboxSentry
    import Foundation

    /// What a spool lost for good — a file the server refused (`too_large` for a 413, else
    /// `send_error`), waiting files the spool's cap removed (`cache_overflow`) — counted in
    /// `<spool>/losses.json` until a pass sends the counts: as a Sentry client report (`client_report`,
    /// docs/sentry.md) or in a bundle of their own (manifest format 4, docs/bundle.md). Updated only by
    /// a pass, which holds the spool's lock.
    /// Deferred and retried files are not losses: they wait in the spool.
    public struct DeliveryLosses: Sendable {
        /// Kinds of loss kept; further ones add to the last (a bounded file whatever happens).
        static let maxEntries = 64
        /// Client reports this ledger wrote: their own refusal is not counted again.
        static let maxCarriers = 16

        public let path: String
        /// The version the losses of this process are counted under.
        public let appVersion: String?
        /// Sentry's data category of what the spool holds (`error` for events, `attachment` for bundles).
        public let category: String

        private struct Ledger: Codable {
            var losses: [DeliveryLoss] = []
            var carriers: [UUID] = []
        }

        public init(spool: Spool, appVersion: String?, category: String) {
            self.path = "\(spool.directory)/losses.json"
            self.appVersion = appVersion
            self.category = category
        }

        public var pending: [DeliveryLoss] { read().losses }

        func record(_ reason: String, quantity: Int = 1, category: String? = nil) {
            guard quantity > 0 else { return }
            var ledger = read()
            let loss = DeliveryLoss(
                appVersion: appVersion, category: category ?? self.category, reason: reason, quantity: quantity)
            if let index = ledger.losses.firstIndex(where: {
                ($0.appVersion, $0.category, $0.reason) == (loss.appVersion, loss.category, loss.reason)
            }) ?? (ledger.losses.count >= Self.maxEntries ? ledger.losses.indices.last : nil) {
                ledger.losses[index].quantity = min(ledger.losses[index].quantity + quantity, Int(Int32.max))
            } else {
                ledger.losses.append(loss)
            }
            write(ledger)
        }

        /// A refused file: a loss, unless it was one of this ledger's own client reports.
        func refused(_ bundle: Spool.Bundle, status: Int) {
            guard !read().carriers.contains(bundle.id) else { return }
            record(status == 413 ? "too_large" : "send_error")
        }

        /// Writes the pending counts into `spool` as envelopes of one `client_report` item per
        /// version they were counted under (a client report has no field for it: the header's trace
        /// context names the release, `release` for this process's version, the bare version for an
        /// earlier one's), then clears them. Nothing pending: nothing written.
        package func writeClientReport(into spool: Spool, release: String?) throws {
            var ledger = read()
            guard !ledger.losses.isEmpty else { return }
            var versions: [String?] = []
            for loss in ledger.losses where !versions.contains(loss.appVersion) { versions.append(loss.appVersion) }
            var carriers: [UUID] = []
            for version in versions {
                let report = SentryClientReport(
                    timestamp: Date().timeIntervalSince1970,
                    discardedEvents: ledger.losses.filter { $0.appVersion == version }.map {
                        .init(reason: $0.reason, category: $0.category, quantity: $0.quantity)
                    })
                var header = SentryEnvelope.Header(sdk: SentryEvent.envelopeSDK)
                let named = version == appVersion ? release ?? version : version
                header.trace = named.map { SentryEnvelope.TraceContext(release: $0) }
                let envelope = SentryEnvelope(
                    header: header,
                    items: [.init(type: "client_report", payload: try SentryEnvelope.jsonEncoder().encode(report))])
                let id = UUID()
                try DurableFile.write(
                    try envelope.encoded(),
                    to: "\(spool.directory)/\(id.uuidString.lowercased()).\(spool.fileExtension)")
                carriers.append(id)
            }
            sent(&ledger, in: carriers)
        }

        /// Writes the pending counts into `spool` as a bundle of their own (`BundleWriter.writeLosses`),
        /// then clears them.
        package func writeLossBundle(into spool: Spool, writer: BundleWriter) throws {
            var ledger = read()
            guard !ledger.losses.isEmpty else { return }
            let written = try writer.writeLosses(ledger.losses, into: spool.directory)
            sent(&ledger, in: [written.id])
        }

        /// The pending counts are in the spool as `carriers`: cleared, and the carriers remembered.
        private func sent(_ ledger: inout Ledger, in carriers: [UUID]) {
            ledger.losses = []
            ledger.carriers = Array((ledger.carriers + carriers).suffix(Self.maxCarriers))
            write(ledger)
        }

        private func read() -> Ledger {
            guard let data = FileManager.default.contents(atPath: path),
                let ledger = try? JSONDecoder().decode(Ledger.self, from: data)
            else { return Ledger() }
            return ledger
        }

        private func write(_ ledger: Ledger) {
            // Best effort: a count that cannot be written is a count lost, never a failed pass.
            guard let data = try? JSONEncoder().encode(ledger) else { return }
            try? DurableFile.write(Array(data), to: path)
        }
    }
#endif
