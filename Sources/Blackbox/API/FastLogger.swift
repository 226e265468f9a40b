/// The native fast logging API, for hot paths: same levels, sinks and files as the swift-log path,
/// without swift-log's per-call `String`.
///
/// ```swift
/// let log = Blackbox.fastLogger("net")
/// log.info("request id=\(id) user=\(name) took \(ms) ms")
/// ```
/// A disabled call costs one relaxed byte load and a compare. An enabled call encodes the message on the
/// stack (see `FastLogMessage`), reserves journal space with one compare-and-swap and copies it in.
@frozen
public struct FastLogger: Sendable {
    @usableFromInline
    let label: LabelHandle

    public init(label: String, core: LoggingCore) {
        self.label = core.handle(for: label)
    }

    @inlinable
    public func isEnabled(_ level: LogLevel) -> Bool { label.isEnabled(level) }

    @inlinable
    public func log(
        _ level: LogLevel, _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        guard label.isEnabled(level) else { return }
        var message = message()
        label.core._withUnsafeGuaranteedRef {
            $0.appendSegments(level: level, label: label, message: &message, file: file, function: function, line: line)
        }
    }

    @inlinable
    public func trace(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.trace, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func debug(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.debug, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func info(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.info, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func notice(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.notice, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func warning(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.warning, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func error(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.error, message(), file: file, function: function, line: line)
    }
    @inlinable
    public func critical(
        _ message: @autoclosure () -> FastLogMessage, file: StaticString = #fileID,
        function: StaticString = #function, line: UInt = #line
    ) {
        log(.critical, message(), file: file, function: function, line: line)
    }
}
