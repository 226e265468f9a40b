import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One line of `llvm-symbolizer --inlining --output-style=JSON --functions=linkage` output (one JSON
/// object per input address) as report symbols: innermost (inlined) first, Swift names demangled.
/// Shared by next-launch processing on the crashing machine and by the collector.
public enum SymbolizerOutput {
    private struct Line: Decodable {
        struct Entry: Decodable {
            var functionName: String?
            var fileName: String?
            var line: Int?
            var column: Int?
            enum CodingKeys: String, CodingKey {
                case functionName = "FunctionName"
                case fileName = "FileName"
                case line = "Line"
                case column = "Column"
            }
        }
        var symbol: [Entry]?
        enum CodingKeys: String, CodingKey { case symbol = "Symbol" }
    }

    /// The arguments that make llvm-symbolizer write what this parses.
    public static let arguments = ["--inlining", "--output-style=JSON", "--functions=linkage"]

    /// Empty when the line names nothing (or is not llvm-symbolizer's JSON).
    public static func symbols(fromJSONLine line: [UInt8]) -> [CrashReport.Symbol] {
        guard let parsed = try? JSONDecoder().decode(Line.self, from: Data(line)), let entries = parsed.symbol else {
            return []
        }
        return entries.enumerated().compactMap { index, entry in
            guard let raw = entry.functionName, !raw.isEmpty, raw != "??" else { return nil }
            let file = entry.fileName.flatMap { $0.isEmpty || $0 == "??" ? nil : $0 }
            let demangled = SwiftDemangler.demangle(raw)
            return CrashReport.Symbol(
                function: demangled ?? raw, mangledName: demangled == nil ? nil : raw, file: file,
                line: entry.line.flatMap { $0 > 0 ? $0 : nil }, column: entry.column.flatMap { $0 > 0 ? $0 : nil },
                inlined: index < entries.count - 1)
        }
    }
}
