import Logging

extension Logger {
    /// Logs an error with its domain, code and underlying chain as metadata, in the developer's
    /// language (`error.domain`, `error.code`, `error.chain`), and the error as swift-log's `error:`.
    public func log(
        error: any Error, level: Logger.Level = .error, _ message: @autoclosure () -> String = "",
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        let diagnostic = DiagnosticError(error)
        var metadata: Logger.Metadata = [
            "error.domain": "\(diagnostic.domain)", "error.code": "\(diagnostic.code)",
        ]
        let chain = diagnostic.causeChain
        if chain.count > 1 {
            metadata["error.chain"] = .array(chain.map { "\($0.domain)#\($0.code)" })
        }
        if let path = diagnostic.userInfo.filePath { metadata["error.path"] = "\(path)" }
        for (key, value) in diagnostic.userInfo.custom { metadata["error.\(key)"] = "\(value)" }
        let prefix = message()
        // The error itself goes along too (swift-log's `error:`): handlers that read it see it, and
        // Blackbox's notes this line as the error's site for a capture later in the request.
        log(
            level: level, "\(prefix.isEmpty ? "" : prefix + ": ")\(diagnostic.description)", error: error,
            metadata: metadata, source: nil, file: file, function: function, line: line)
    }
}

/// Runs `body`; a thrown error is logged (domain, code, chain) and rethrown unchanged.
///
/// ```swift
/// let order = try logErrors(to: logger, "loading the order") { try store.order(id) }
/// ```
public func logErrors<T>(
    to logger: Logger, _ message: @autoclosure () -> String = "", level: Logger.Level = .error,
    file: String = #fileID, function: String = #function, line: UInt = #line, _ body: () throws -> T
) rethrows -> T {
    do {
        return try body()
    } catch {
        logger.log(error: error, level: level, message(), file: file, function: function, line: line)
        throw error
    }
}

public func logErrors<T>(
    to logger: Logger, _ message: @autoclosure () -> String = "", level: Logger.Level = .error,
    file: String = #fileID, function: String = #function, line: UInt = #line, _ body: () async throws -> T
) async rethrows -> T {
    do {
        return try await body()
    } catch {
        logger.log(error: error, level: level, message(), file: file, function: function, line: line)
        throw error
    }
}
