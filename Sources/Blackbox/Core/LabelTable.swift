import Atomics
import Logging
import Synchronization

/// A label's interned entry: its effective level (an atomic byte, changed at run time), its owning core
/// and its UTF-8 bytes. Entries are allocated once per distinct label and never freed, which is what
/// lets handlers and fast loggers refer to them with a plain pointer and stay trivially copyable.
///
/// Memory layout of the allocation:
/// ```
/// 0   UInt8    effective level (atomic)
/// 1   UInt8    the same as a swift-log level (off stored as critical), read by `BlackboxLogHandler.logLevel`
/// 8   pointer  owning LoggingCore (unretained; cores are immortal too)
/// 16  Int      label byte count
/// 24  ...      label bytes
/// ```
@frozen
@usableFromInline
struct LabelHandle: @unchecked Sendable {
    @usableFromInline
    let entry: UnsafeMutableRawPointer

    @inlinable
    var level: LogLevel {
        let byte = UnsafeAtomic<UInt8>(at: entry.assumingMemoryBound(to: UInt8.AtomicRepresentation.self))
            .load(ordering: .relaxed)
        return LogLevel(rawValue: byte) ?? .off
    }

    @inlinable
    func isEnabled(_ level: LogLevel) -> Bool {
        level.rawValue
            >= UnsafeAtomic<UInt8>(at: entry.assumingMemoryBound(to: UInt8.AtomicRepresentation.self))
            .load(ordering: .relaxed)
    }

    /// The owning core, unretained: cores are immortal, so no reference counting is needed.
    @usableFromInline
    var core: Unmanaged<LoggingCore> {
        Unmanaged<LoggingCore>.fromOpaque(entry.load(fromByteOffset: 8, as: UnsafeRawPointer.self))
    }

    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: entry + 24, count: entry.load(fromByteOffset: 16, as: Int.self))
    }

    /// The level as swift-log's enum, without a conversion: swift-log reads it on every call,
    /// enabled or not.
    var loggerLevel: Logger.Level {
        let byte = UnsafeAtomic<UInt8>(at: (entry + 1).assumingMemoryBound(to: UInt8.AtomicRepresentation.self))
            .load(ordering: .relaxed)
        switch byte {
        case 0: return .trace
        case 1: return .debug
        case 2: return .info
        case 3: return .notice
        case 4: return .warning
        case 5: return .error
        default: return .critical
        }
    }

    func setLevel(_ level: LogLevel) {
        UnsafeAtomic<UInt8>(at: (entry + 1).assumingMemoryBound(to: UInt8.AtomicRepresentation.self))
            .store(min(level.rawValue, LogLevel.critical.rawValue), ordering: .relaxed)
        UnsafeAtomic<UInt8>(at: entry.assumingMemoryBound(to: UInt8.AtomicRepresentation.self))
            .store(level.rawValue, ordering: .relaxed)
    }

    static func allocate(label: String, level: LogLevel, core: LoggingCore) -> LabelHandle {
        var utf8 = Array(label.utf8)
        if utf8.count > maxLabelBytes {
            var cut = maxLabelBytes
            while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }  // keep whole characters
            utf8.removeSubrange(cut...)
        }
        let entry = UnsafeMutableRawPointer.allocate(byteCount: 24 + utf8.count, alignment: 8)
        entry.initializeMemory(as: UInt8.self, repeating: 0, count: 24)
        entry.storeBytes(
            of: UnsafeRawPointer(Unmanaged.passUnretained(core).toOpaque()), toByteOffset: 8, as: UnsafeRawPointer.self)
        entry.storeBytes(of: utf8.count, toByteOffset: 16, as: Int.self)
        utf8.withUnsafeBytes { bytes in
            if let source = bytes.baseAddress { (entry + 24).copyMemory(from: source, byteCount: bytes.count) }
        }
        let handle = LabelHandle(entry: entry)
        handle.setLevel(level)
        return handle
    }
}

/// Labels longer than this are cut (at a character boundary) when interned, so that a label can
/// never crowd the message out of a record.
let maxLabelBytes = 256

/// The labels a core has seen and the level rules that apply to them.
final class LabelTable: Sendable {
    /// Labels are interned for the life of the process; past this many, new labels share one entry
    /// (named below) so that a program minting labels per request cannot grow memory without bound.
    static let limit = 16_384
    static let overflowLabel = "blackbox.too-many-labels"

    private struct State {
        var handles: [String: LabelHandle] = [:]
        var levels: LevelSettings
        var overflow: LabelHandle?
    }
    private let state: Mutex<State>
    private let owner = Mutex<Unmanaged<LoggingCore>?>(nil)

    init(levels: LevelSettings) {
        self.state = Mutex(State(levels: levels))
    }

    /// Set once by the owning core at the end of its initializer.
    func attach(to core: LoggingCore) {
        owner.withLock { $0 = Unmanaged.passUnretained(core) }
    }

    private var core: Unmanaged<LoggingCore> {
        guard let core = owner.withLock({ $0 }) else { preconditionFailure("LabelTable used before its core attached") }
        return core
    }

    func handle(for label: String) -> LabelHandle {
        state.withLock { state in
            if let existing = state.handles[label] { return existing }
            if state.handles.count >= Self.limit {
                if let overflow = state.overflow { return overflow }
                let overflow = LabelHandle.allocate(
                    label: Self.overflowLabel, level: state.levels.level(for: Self.overflowLabel),
                    core: core.takeUnretainedValue())
                state.overflow = overflow
                InternalDiagnostics.report(
                    "more than \(Self.limit) distinct logger labels; further labels are logged as \(Self.overflowLabel)"
                )
                return overflow
            }
            let handle = LabelHandle.allocate(
                label: label, level: state.levels.level(for: label), core: core.takeUnretainedValue())
            state.handles[label] = handle
            return handle
        }
    }

    var levels: LevelSettings {
        get { state.withLock { $0.levels } }
        set {
            state.withLock { state in
                state.levels = newValue
                for (label, handle) in state.handles { handle.setLevel(newValue.level(for: label)) }
                state.overflow?.setLevel(newValue.level(for: Self.overflowLabel))
            }
        }
    }
}
