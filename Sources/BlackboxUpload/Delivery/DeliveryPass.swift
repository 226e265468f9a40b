#if Upload
    import Blackbox
    import Logging

    /// The opening every delivery pass shares (the collector's and Sentry's): one uploader per spool,
    /// the active log flushed, what is new chosen, and consent asked. Nil when there is nothing to
    /// do, another process holds the spool, or consent says no.
    struct DeliveryPass {
        let lock: SpoolLock
        let snapshot: DiagnosticsSnapshot
        let selection: DiagnosticsSnapshot.Selection

        init?(
            _ context: DeliveryContext, spool: Spool, options: BundleOptions, consent: UploadConsent, logger: Logger
        ) async {
            guard let lock = SpoolLock(spool: spool) else {
                logger.debug("another process is uploading from \(context.directory); skipping this pass")
                return nil
            }
            _ = context.core.flush(timeout: .seconds(2))
            let snapshot = DiagnosticsSnapshot(
                directory: context.directory, baseFileName: context.configuration.baseFileName, options: options)
            let selection = snapshot.select()
            let waiting = spool.pending().count
            guard !selection.isEmpty || waiting > 0 else { return nil }
            let request = ConsentRequest(
                reports: selection.reports.count,
                logFiles: selection.archives.count + (selection.activeLog == nil ? 0 : 1),
                waitingBundles: waiting, bytes: selection.bytes)
            guard await consent.allows(request) else {
                logger.debug(
                    "upload not allowed by consent; \(request.reports) reports and \(waiting) waiting files stay local")
                return nil
            }
            self.lock = lock
            self.snapshot = snapshot
            self.selection = selection
        }
    }
#endif
