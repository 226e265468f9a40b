#if Upload
    import Blackbox
    import Logging
    import Synchronization

    /// The opening every delivery pass shares (the collector's and Sentry's): one uploader per spool,
    /// the active log flushed (and its new lines cut into the spool, when shipped live), what is new
    /// chosen, and consent asked. Nil when there is nothing to do, another process holds the spool, or
    /// consent says no.
    struct DeliveryPass {
        let lock: SpoolLock
        let snapshot: DiagnosticsSnapshot
        let selection: DiagnosticsSnapshot.Selection

        /// The spools whose waiting bundles this process has marked as bundled.
        private static let reconciled = Mutex<Set<String>>([])

        init?(
            _ context: DeliveryContext, spool: Spool, options: BundleOptions, consent: UploadConsent, logger: Logger,
            liveLog: (shipping: LiveLogShipping, writer: BundleWriter)? = nil, losses: DeliveryLosses? = nil
        ) async {
            guard let lock = SpoolLock(spool: spool) else {
                logger.debug("another process is uploading from \(context.directory); skipping this pass")
                return nil
            }
            _ = context.core.flush(timeout: .seconds(2))
            let snapshot = DiagnosticsSnapshot(
                directory: context.directory, baseFileName: context.configuration.baseFileName, options: options)
            // Only a process that died mid-pass leaves bundles unmarked, so once per process is enough.
            if spool.fileExtension == "zip", Self.reconciled.withLock({ $0.insert(spool.directory).inserted }) {
                do {
                    try snapshot.markBundled(waitingIn: spool)
                } catch {
                    logger.error("cannot mark what the waiting bundles hold as bundled: \(error)")
                }
            }
            var selection = snapshot.select()
            let waiting = spool.pending().count
            let liveLines = liveLog?.shipping.hasNewLines() == true
            let lossesToSend = losses?.pending.isEmpty == false
            guard !selection.isEmpty || waiting > 0 || liveLines || lossesToSend else { return nil }
            let request = ConsentRequest(
                reports: selection.reports.count,
                logFiles: selection.archives.count + (selection.activeLog == nil && !liveLines ? 0 : 1),
                waitingBundles: waiting, bytes: selection.bytes)
            guard await consent.allows(request) else {
                logger.debug(
                    "upload not allowed by consent; \(request.reports) reports and \(waiting) waiting files stay local")
                return nil
            }
            if let liveLog {
                if liveLines {
                    do {
                        try liveLog.shipping.cut(writer: liveLog.writer, into: spool)
                    } catch {
                        logger.error("cannot cut the active log's new lines for upload: \(error)")
                    }
                    // The cut may have shipped the rest of a rotated file from its archive, and recorded
                    // the archive as sent: chosen again, it is not in this pass's bundles.
                    selection = snapshot.select()
                }
                // Rotated since the cut (or left by a failed one): the archive's rest goes in the next
                // cut, and whole it would bring its shipped lines a second time. Asked after choosing, so
                // an archive chosen is one this sees (compared without `.gz`: it may have been
                // compressed in between).
                if let inFlight = liveLog.shipping.archiveInFlight().map(SentArchives.uncompressed) {
                    selection.archives.removeAll {
                        SentArchives.uncompressed(String($0.entryPath.dropFirst("logs/".count))) == inFlight
                    }
                }
            }
            // Held, not sent, since the server stopped answering: no more log than the retention keeps.
            let pruned = spool.enforce(options.spoolCap ?? SpoolCap(retention: context.configuration.retention))
            if !pruned.dropped.isEmpty || pruned.rejectedRemoved > 0 {
                losses?.record("cache_overflow", quantity: pruned.dropped.count, category: "log_item")
                let bytes = pruned.dropped.reduce(Int64(0)) { $0 + $1.size }
                logger.warning(
                    "the upload spool is over its cap: removed \(pruned.dropped.count) waiting log-only files (\(bytes) bytes) and \(pruned.rejectedRemoved) refused ones; reports are kept"
                )
            }
            self.lock = lock
            self.snapshot = snapshot
            self.selection = selection
        }
    }
#endif
