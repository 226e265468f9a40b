import Foundation

/// A streaming reader of a `multipart/form-data` body (RFC 7578, RFC 2046 §5.1): each part's headers,
/// then its bytes as they arrive, in memory bounded by the largest buffer fed plus the delimiter.
///
/// Hand-written: MultipartKit 4.7's parser (the package mirror's newest) traps on a header name byte
/// over 0x7F (it indexes a 128-entry table with it), so one form from a holder of a symbols key
/// stopped the collector (found by `IngestFuzzTests`). What sentry-cli sends needs little of the
/// format: no nested multiparts, no header folding.
final class MultipartReader {
    struct SyntaxError: Error, CustomStringConvertible {
        var description: String
    }

    /// The headers of one part, at most: sentry-cli sends about 150 bytes.
    static let maxHeaderBytes = 16 << 10

    var onHeader: (_ name: String, _ value: String) -> Void = { _, _ in }
    var onBody: (_ bytes: ArraySlice<UInt8>) -> Void = { _ in }
    var onPartComplete: () -> Void = {}

    /// True once the closing delimiter (`--boundary--`) has been read.
    var isComplete: Bool { state == .epilogue }

    private enum State: Equatable {
        case preamble, afterDelimiter, headers, body, epilogue
    }

    /// `CRLF--boundary`: what ends a part's bytes.
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes fed and not yet handed on: a partial delimiter, header line or the delimiter's suffix.
    private var pending: [UInt8]
    private var headerBytes = 0

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The first delimiter may open the body without a line before it: read as if one ended there.
        pending = [13, 10]
    }

    func execute(_ bytes: some Sequence<UInt8>) throws(SyntaxError) {
        pending.append(contentsOf: bytes)
        var start = 0
        defer { pending.removeFirst(start) }
        while true {
            switch state {
            case .preamble, .body:
                if let found = firstDelimiter(from: start) {
                    if state == .body {
                        if found > start { onBody(pending[start..<found]) }
                        onPartComplete()
                    }
                    start = found + delimiter.count
                    state = .afterDelimiter
                } else {
                    // All but what could be the beginning of a delimiter is the part's (or ignored).
                    let safe = max(start, pending.count - (delimiter.count - 1))
                    if state == .body, safe > start { onBody(pending[start..<safe]) }
                    start = safe
                    return
                }
            case .afterDelimiter:
                guard pending.count - start >= 2 else { return }
                let next = (pending[start], pending[start + 1])
                start += 2
                if next == (UInt8(ascii: "-"), UInt8(ascii: "-")) {
                    state = .epilogue
                } else if next == (13, 10) {
                    state = .headers
                    headerBytes = 0
                } else {
                    throw SyntaxError(description: "a boundary is followed by neither a line end nor --")
                }
            case .headers:
                guard let end = lineEnd(from: start) else {
                    guard headerBytes + pending.count - start <= Self.maxHeaderBytes else {
                        throw SyntaxError(description: "a part's headers are longer than \(Self.maxHeaderBytes) bytes")
                    }
                    return
                }
                headerBytes += end - start + 2
                guard headerBytes <= Self.maxHeaderBytes else {
                    throw SyntaxError(description: "a part's headers are longer than \(Self.maxHeaderBytes) bytes")
                }
                let line = pending[start..<end]
                start = end + 2
                if line.isEmpty {
                    state = .body
                } else {
                    try header(line)
                }
            case .epilogue:
                start = pending.count
                return
            }
        }
    }

    /// `Name: value`; a name is a token (RFC 9110 §5.6.2), the value is read as UTF-8 and trimmed.
    private func header(_ line: ArraySlice<UInt8>) throws(SyntaxError) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
            line[..<colon].allSatisfy(Self.isTokenCharacter)
        else { throw SyntaxError(description: "a part's header line is not `name: value`") }
        let name = String(decoding: line[..<colon], as: UTF8.self)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
        onHeader(name, value.trimmingCharacters(in: .whitespaces))
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// Where the next delimiter starts, at or after `from`. Linear: a candidate is checked only where
    /// a CR is, and the delimiter is at most 74 bytes.
    private func firstDelimiter(from: Int) -> Int? {
        var index = from
        while index + delimiter.count <= pending.count {
            guard let candidate = pending[index...].firstIndex(of: 13),
                candidate + delimiter.count <= pending.count
            else { return nil }
            if pending[candidate..<(candidate + delimiter.count)].elementsEqual(delimiter) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    /// Where the line starting at `from` ends (its CR), if its CRLF has arrived.
    private func lineEnd(from: Int) -> Int? {
        var index = from
        while index + 1 < pending.count {
            if pending[index] == 13, pending[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }
}
