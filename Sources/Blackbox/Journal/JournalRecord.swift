/// The byte layout of one journal record (see docs/journal.md).
///
/// ```
/// 0   u64  commit word: position | 1<<63, stored last with release ordering
/// 8   u32  length of the record in bytes, header included, before padding to 8
/// 12  u32  checksum of bytes [16, length), seeded with the position (`journalChecksum`)
/// 16  u64  timestamp, nanoseconds since the Unix epoch (CLOCK_REALTIME)
/// 24  u32  thread id (gettid)
/// 28  u32  source line
/// 32  u8   kind (`RecordKind`)
/// 33  u8   level (`LogLevel` ordinal)
/// 34  u16  label length
/// 36  u16  source file length
/// 38  u16  flags (`RecordFlags`)
/// 40  u32  message length
/// 44  u32  metadata length
/// 48  label, file, message, metadata bytes; then, with `carriesErrorValue`, an error value (32 bytes)
/// ```
/// The position doubles as the record's sequence number: it is unique and strictly increasing over
/// the life of the journal file, so a stale record from an earlier lap of the ring never matches the
/// commit word the reader expects, and a zeroed page never looks committed.
enum RecordLayout {
    static let headerSize = 48
    static let commitBit: UInt64 = 1 << 63

    static let length = 8
    static let checksum = 12
    static let timestamp = 16
    static let threadID = 24
    static let line = 28
    static let kind = 32
    static let level = 33
    static let labelLength = 34
    static let fileLength = 36
    static let flags = 38
    static let messageLength = 40
    static let metadataLength = 44

    @inline(__always)
    static func aligned(_ size: Int) -> Int { (size + 7) & ~7 }
}

/// How the message bytes of a record are encoded.
enum RecordKind: UInt8 {
    /// UTF-8 text (the swift-log path).
    case text = 0
    /// `FastLogMessage` segments (the native path), rendered on the writer thread.
    case segments = 1
}

struct RecordFlags: OptionSet {
    let rawValue: UInt16
    /// The message or metadata was cut to fit the journal; a marker says how much was lost.
    static let truncated = RecordFlags(rawValue: 1)
    /// The source file part holds the file, a NUL and the calling function: written only when an
    /// output shows the function (journald's `CODE_FUNC`), so other records pay no bytes for it.
    static let carriesFunction = RecordFlags(rawValue: 2)
    /// The metadata's last `error` entry holds the error's type name; the writer prints the line with
    /// the error's description instead (`DeferredErrorDescriptions`). Recovery keeps the type name.
    static let describesErrorLater = RecordFlags(rawValue: 4)
    /// The call's error was not due for a report at its site (`CaptureGates`); the writer counts it
    /// in the site's next report. Only in records with `describesErrorLater`; meaningless to readers
    /// other than the writer of the process that wrote it.
    static let captureCountedByWriter = RecordFlags(rawValue: 8)
    /// The record ends with the call's error value (`RecordErrorValue`, after the metadata): a plain
    /// value the writer describes from there. Only with `describesErrorLater`; other readers skip it.
    static let carriesErrorValue = RecordFlags(rawValue: 16)
}

/// A read-only view of a committed record inside the ring. Valid until the writer releases it.
struct RecordView {
    let base: UnsafeRawPointer

    var length: Int { Int(base.load(fromByteOffset: RecordLayout.length, as: UInt32.self)) }
    var timestampNanoseconds: UInt64 { base.load(fromByteOffset: RecordLayout.timestamp, as: UInt64.self) }
    var threadID: UInt32 { base.load(fromByteOffset: RecordLayout.threadID, as: UInt32.self) }
    var line: UInt32 { base.load(fromByteOffset: RecordLayout.line, as: UInt32.self) }
    var kind: RecordKind? { RecordKind(rawValue: base.load(fromByteOffset: RecordLayout.kind, as: UInt8.self)) }
    var level: LogLevel { LogLevel(clamping: base.load(fromByteOffset: RecordLayout.level, as: UInt8.self)) }
    var flags: RecordFlags { RecordFlags(rawValue: base.load(fromByteOffset: RecordLayout.flags, as: UInt16.self)) }

    private var labelCount: Int { Int(base.load(fromByteOffset: RecordLayout.labelLength, as: UInt16.self)) }
    private var fileCount: Int { Int(base.load(fromByteOffset: RecordLayout.fileLength, as: UInt16.self)) }
    private var messageCount: Int { Int(base.load(fromByteOffset: RecordLayout.messageLength, as: UInt32.self)) }
    private var metadataCount: Int { Int(base.load(fromByteOffset: RecordLayout.metadataLength, as: UInt32.self)) }

    var label: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + RecordLayout.headerSize, count: labelCount)
    }
    /// The source file, without the function a record may carry after it.
    var file: UnsafeRawBufferPointer {
        let part = sourcePart
        guard flags.contains(.carriesFunction), let end = part.firstIndex(of: 0) else { return part }
        return UnsafeRawBufferPointer(rebasing: part[..<end])
    }
    /// The calling function, when the record carries it (`RecordFlags.carriesFunction`); else empty.
    var function: UnsafeRawBufferPointer {
        let part = sourcePart
        guard flags.contains(.carriesFunction), let end = part.firstIndex(of: 0) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(rebasing: part[(end + 1)...])
    }
    private var sourcePart: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + RecordLayout.headerSize + labelCount, count: fileCount)
    }
    var message: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + RecordLayout.headerSize + labelCount + fileCount, count: messageCount)
    }
    var metadata: MetadataReader {
        MetadataReader(
            bytes: UnsafeRawBufferPointer(
                start: base + RecordLayout.headerSize + labelCount + fileCount + messageCount, count: metadataCount))
    }

    /// The error value after the metadata (`RecordFlags.carriesErrorValue`); nil when there is none.
    var errorValue: UnsafeRawBufferPointer? {
        guard flags.contains(.carriesErrorValue) else { return nil }
        return UnsafeRawBufferPointer(start: base + length - RecordErrorValue.size, count: RecordErrorValue.size)
    }

    /// True when the parts add up to the record's length and the kind is known: checked during
    /// recovery, where the bytes come from a process that may have died mid-write.
    var isWellFormed: Bool {
        kind != nil
            && RecordLayout.headerSize + labelCount + fileCount + messageCount + metadataCount
                + RecordErrorValue.count(in: flags) == length
    }
}

/// Writes a record's parts into reserved journal space. The caller computed the exact size first.
struct RecordWriter {
    let base: UnsafeMutableRawPointer
    var offset = RecordLayout.headerSize

    init(base: UnsafeMutableRawPointer) { self.base = base }

    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        copyBytes(to: base + offset, from: source, count: bytes.count)
        offset += bytes.count
    }

    /// The NUL that ends the file part, then the first `count` bytes of `function`
    /// (`RecordFlags.carriesFunction`).
    @inline(__always)
    mutating func appendFunction(_ function: UnsafeRawBufferPointer, count: Int) {
        append(UInt8(0))
        append(UnsafeRawBufferPointer(rebasing: function[..<count]))
    }

    @inline(__always)
    mutating func append<T: FixedWidthInteger>(_ value: T) {
        base.storeBytes(of: value, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    @inline(__always)
    func writeHeader(
        timestamp: UInt64, threadID: UInt32, line: UInt32, kind: RecordKind, level: LogLevel,
        labelCount: Int, fileCount: Int, flags: RecordFlags, messageCount: Int, metadataCount: Int
    ) {
        base.storeBytes(of: timestamp, toByteOffset: RecordLayout.timestamp, as: UInt64.self)
        base.storeBytes(of: threadID, toByteOffset: RecordLayout.threadID, as: UInt32.self)
        base.storeBytes(of: line, toByteOffset: RecordLayout.line, as: UInt32.self)
        base.storeBytes(of: kind.rawValue, toByteOffset: RecordLayout.kind, as: UInt8.self)
        base.storeBytes(of: level.rawValue, toByteOffset: RecordLayout.level, as: UInt8.self)
        base.storeBytes(of: UInt16(labelCount), toByteOffset: RecordLayout.labelLength, as: UInt16.self)
        base.storeBytes(of: UInt16(fileCount), toByteOffset: RecordLayout.fileLength, as: UInt16.self)
        base.storeBytes(of: flags.rawValue, toByteOffset: RecordLayout.flags, as: UInt16.self)
        base.storeBytes(of: UInt32(messageCount), toByteOffset: RecordLayout.messageLength, as: UInt32.self)
        base.storeBytes(of: UInt32(metadataCount), toByteOffset: RecordLayout.metadataLength, as: UInt32.self)
    }
}
