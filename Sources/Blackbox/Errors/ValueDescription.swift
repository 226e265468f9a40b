/// How Swift prints a value of one type, as `String(describing:)` does, with the type's conformances
/// looked up once instead of at every value.
///
/// `String(describing:)` asks the runtime, for each value, whether its type is `TextOutputStreamable`,
/// then `CustomStringConvertible`, then `CustomDebugStringConvertible`, and prints by reflection when
/// none: two or three conformance lookups (~150 ns) before a description that costs about as much.
/// The writer describes every log call's error (`DeferredErrorDescriptions`), so the lookups were a
/// tenth of its work on a line with an error. Made once per error type (`ErrorTypeFacts`), in a
/// generic context where the answers are known; a value printed by reflection still goes through
/// `String(describing:)`, whose reflection is the cost there.
///
/// `@unchecked Sendable`: the closures capture a metatype and its conformances, nothing mutable.
struct ValueDescription: @unchecked Sendable {
    /// The text of the value at the address, which holds a value of the type, aligned for it.
    let ofValue: (UnsafeRawPointer) -> String

    static func of<Value>(_ type: Value.Type) -> ValueDescription {
        // The order `String(describing:)` asks in (the standard library's `_print_unlocked`).
        if let streamable = type as? any TextOutputStreamable.Type { return streaming(streamable) }
        if let convertible = type as? any CustomStringConvertible.Type { return describing(convertible) }
        if let debuggable = type as? any CustomDebugStringConvertible.Type { return debugDescribing(debuggable) }
        return ValueDescription { String(describing: $0.assumingMemoryBound(to: Value.self).pointee) }
    }

    private static func streaming<Value: TextOutputStreamable>(_: Value.Type) -> ValueDescription {
        ValueDescription {
            var text = ""
            $0.assumingMemoryBound(to: Value.self).pointee.write(to: &text)
            return text
        }
    }

    private static func describing<Value: CustomStringConvertible>(_: Value.Type) -> ValueDescription {
        ValueDescription { $0.assumingMemoryBound(to: Value.self).pointee.description }
    }

    private static func debugDescribing<Value: CustomDebugStringConvertible>(_: Value.Type) -> ValueDescription {
        ValueDescription { $0.assumingMemoryBound(to: Value.self).pointee.debugDescription }
    }
}
