import CCrashHandler
import Synchronization

/// Values that every later crash (and non-fatal) report carries: who was using the app, which
/// request was running, which flag was on. The crash handler reads them from a fixed table in static
/// memory (Sources/CCrashHandler/annotations.c), so setting one is cheap and a crash never waits for
/// it. Bounded: 32 keys of at most 31 bytes (letters, digits, `.`, `_`, `-`), values of at most 255
/// bytes (longer ones are cut at a character boundary; line breaks become spaces).
public enum CrashAnnotations {
    public static let maxKeys = Int(BBX_ANNOTATION_LIMIT)
    public static let maxKeyBytes = Int(BBX_ANNOTATION_KEY_BYTES)
    public static let maxValueBytes = Int(BBX_ANNOTATION_VALUE_BYTES)

    /// The same values, for the reports written in ordinary code (non-fatal assertions).
    private static let mirror = Mutex<[String: String]>([:])

    /// Sets `key` to `value`, or removes it when `value` is nil. False when the key is not valid or
    /// the table is full (the value is then not recorded).
    @discardableResult
    public static func set(_ key: String, _ value: String?) -> Bool {
        guard isValidKey(key) else { return false }
        let clean = value.map(cleanValue)
        return mirror.withLock { mirror in
            let status = key.withCString { keyPointer in
                if let clean {
                    clean.withCString { bbx_crash_set_annotation(keyPointer, $0) }
                } else {
                    bbx_crash_set_annotation(keyPointer, nil)
                }
            }
            guard status == 0 else { return false }
            mirror[key] = clean
            return true
        }
    }

    /// What is set now.
    public static var current: [String: String] { mirror.withLock { $0 } }

    static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= maxKeyBytes
            && key.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                    || "._-".unicodeScalars.contains($0)
            }
    }

    /// One line, no NUL, no control character (line breaks and the other C0, DEL and C1 controls
    /// become spaces: a value must not steer the terminal that shows a report), at most
    /// `maxValueBytes` of UTF-8 without cutting a character.
    static func cleanValue(_ value: String) -> String {
        var result = ""
        var bytes = 0
        for character in value {
            let text: String =
                character == "\0"
                ? ""
                : character.isNewline || character.unicodeScalars.contains(where: isControl) ? " " : String(character)
            guard bytes + text.utf8.count <= maxValueBytes else { break }
            result += text
            bytes += text.utf8.count
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
