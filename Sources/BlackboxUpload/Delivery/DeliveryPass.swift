#if Upload
    import Blackbox
    import Logging

    /// The opening every delivery pass shares (the collector's and Sentry's): one uploader per spool,
    /// the active log flushed (and its new lines cut into the spool, when shipped live), what is new
    /// chosen, and consent asked. Nil when there is nothing to do, another process holds the spool, or
    /// consent says no.
    struct DeliveryPass {
        let lock: SpoolLock
        let snapshot: DiagnosticsSnapshot
        let selection: DiagnosticsSnapshot.Selection

        init?(
            _ context: DeliveryContext, spool: Spool, options: BundleOptions, consent: UploadConsent, logger: Logger,
            liveLog: (shipping: LiveLogShipping, writer: BundleWriter)? = nil
        ) async {
            guard let lock = SpoolLock(spool: spool) else {
                logger.debug("another process is uploading from \(context.directory); skipping this pass")
                return nil
            }
            _ = context.core.flush(timeout: .seconds(2))
            let snapshot = DiagnosticsSnapshot(
                directory: context.directory, baseFileName: context.configuration.baseFileName, options: options)
            var selection = snapshot.select()
            let waiting = spool.pending().count
            let liveLines = liveLog?.shipping.hasNewLines() == true
            guard !selection.isEmpty || waiting > 0 || liveLines else { return nil }
            let request = ConsentRequest(
                reports: selection.reports.count,
                logFiles: selection.archives.count + (selection.activeLog == nil && !liveLines ? 0 : 1),
                waitingBundles: waiting, bytes: selection.bytes)
            guard await consent.allows(request) else {
                logger.debug(
                    "upload not allowed by consent; \(request.reports) reports and \(waiting) waiting files stay local")
                return nil
            }
            if let liveLog, liveLines {
                do {
                    try liveLog.shipping.cut(writer: liveLog.writer, into: spool)
                } catch {
                    logger.error("cannot cut the active log's new lines for upload: \(error)")
                }
                // The cut may have shipped the rest of a rotated file from its archive, and recorded
                // the archive as sent: chosen again, it is not in this pass's bundles.
                selection = snapshot.select()
            }
            self.lock = lock
            self.snapshot = snapshot
            self.selection = selection
        }
    }
#endif
