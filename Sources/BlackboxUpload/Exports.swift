#if Upload
    // The Sentry protocol's types (`SentryDSN`, `SentryEnvelope`) are part of the delivery's API.
    @_exported import BlackboxSentry
#endif
