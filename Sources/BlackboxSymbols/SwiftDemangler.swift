#if canImport(Glibc)
    import Glibc
#endif

/// Swift names through the runtime's own demangler (`swift_demangle`, exported by every Swift
/// runtime): the toolchain's `swift-demangle` is not where reports are symbolicated.
package enum SwiftDemangler {
    /// The demangled name, or nil when `name` is not a Swift mangled name (C++ names are demangled by
    /// llvm-symbolizer itself).
    package static func demangle(_ name: String) -> String? {
        guard name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_T") || name.hasPrefix("$e") else {
            return nil
        }
        return name.withCString { pointer in
            guard let result = _swiftDemangle(pointer, UInt(strlen(pointer)), nil, nil, 0) else { return nil }
            defer { free(result) }
            return String(cString: result)
        }
    }
}

@_silgen_name("swift_demangle")
private func _swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: UInt, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<UInt>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?
