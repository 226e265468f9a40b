#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension CrashReport {
    /// The report as a classic crash log: header, the crashed thread's frames, every other thread's,
    /// registers, binary images and the last log lines. Every text the report carries is escaped for a
    /// terminal (`escapedForTerminal`): one report line is one line, and nothing in it steers the
    /// terminal.
    public var textRendering: String {
        var out = ""
        func field(_ name: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            out += name.padded(18) + value.escapedForTerminal + "\n"
        }
        field("Diagnosis:", diagnosis?.summary)
        field("Incident:", id.uuidString)
        field("Kind:", kind.rawValue + (partial ? " (partial report)" : ""))
        field("Process:", "\(app.name) [\(process.pid)]")
        field("Path:", process.path)
        field("Version:", [app.version, app.build.map { "(\($0))" }].compactMap { $0 }.joined(separator: " "))
        field("Host:", "\(host.name), \(host.os), \(host.kernel), \(host.architecture)")
        field("Date/Time:", ReportTime.format(process.crashTime))
        field("Launch Time:", process.startTime.map(ReportTime.format))
        if let signal {
            var exception = "\(signal.name) (\(signal.number)), code \(signal.code)"
            if let name = signal.codeName { exception += " (\(name))" }
            field("Exception:", exception)
            field("Fault Address:", signal.faultAddress + (signal.access.map { " (\($0))" } ?? ""))
            field("Fault Memory:", signal.faultMemory?.summary)
            field("Stack Memory:", signal.stackMemory?.summary)
            field("Sent By:", signal.senderPID.map { "pid \($0)" })
        }
        field("Reason:", reason)
        if let termination {
            field("Cause:", termination.cause)
            field("Last Seen Alive:", ReportTime.format(termination.lastSeenAlive))
            field("Noticed At:", ReportTime.format(termination.detectedAt))
            if let before = termination.cgroupOOMKillsBefore {
                field(
                    "Cgroup OOM Kills:",
                    "\(before) at start, \(termination.cgroupOOMKillsAfter.map(String.init) ?? "?") after")
            }
        }
        let threadName = thread.name.map { " \"\($0.escapedForTerminal)\"" } ?? ""
        // A termination has no stack: the process was gone before anything could walk it.
        let hasStack = kind != .termination || !frames.isEmpty
        if hasStack { field("Crashed Thread:", "\(thread.id)\(threadName)") }
        field("Symbols:", symbolicationSummary)
        if let fatalMessage {
            out +=
                "\nFatal Message:\n"
                + fatalMessage.split(separator: "\n").map { "  \(String($0).escapedForTerminal)\n" }.joined()
        }
        if let scope, !scope.isEmpty {
            out += "\nScope:\n"
            for key in scope.keys.sorted() { out += Self.entry(key, scope[key]) }
        }

        if hasStack {
            let role = kind == .crash ? "Crashed" : kind == .hang ? "Unresponsive" : "Reported"
            out += "\nThread \(thread.id)\(threadName) \(role) (\(frameSource)):\n"
            out += renderFrames(frames, omission: omittedFrames)
        }
        for other in threads?.dropFirst() ?? [] {
            let name = other.name.map { " \"\($0.escapedForTerminal)\"" } ?? ""
            let problem = other.problem.map { ", \($0.escapedForTerminal)" } ?? ""
            out += "\nThread \(other.id)\(name) (\(other.frameSource)\(problem)):\n"
            if let scope = other.scope, !scope.isEmpty {
                out +=
                    "  in scope "
                    + scope.keys.sorted().map { "\($0)=\(scope[$0] ?? "")".escapedForTerminal }.joined(separator: " ")
                    + "\n"
            }
            out += renderFrames(other.frames, omission: nil)
        }

        if !registers.isEmpty {
            out += "\nRegisters:\n"
            for row in stride(from: 0, to: registers.count, by: 3) {
                let cells: [String] = registers[row..<min(row + 3, registers.count)].map { register in
                    let name: String = (register.name + ":").padded(8)
                    return name + register.value.padded(20)
                }
                out += "  " + cells.joined(separator: " ") + "\n"
            }
        }

        if !images.isEmpty {
            out += "\nBinary Images:\n"
            for image in images {
                let mismatch = image.buildIDMatches == false ? " (build-id differs from the file on disk)" : ""
                let line = "\(image.start) - \(image.end) \(image.buildID ?? "<no build-id>") \(image.path)"
                out += "  \(line.escapedForTerminal)\(mismatch)\n"
            }
        }
        if let annotations, !annotations.isEmpty {
            out += "\nAnnotations:\n"
            for key in annotations.keys.sorted() { out += Self.entry(key, annotations[key]) }
        }
        if !metadata.isEmpty {
            out += "\nMetadata:\n"
            for key in metadata.keys.sorted() { out += Self.entry(key, metadata[key]) }
        }
        if !logTail.isEmpty {
            out += "\nLast Log Lines:\n" + logTail.map { "  \($0.escapedForTerminal)\n" }.joined()
        }
        if !notes.isEmpty {
            out += "\nNotes:\n" + notes.map { "  - \($0.escapedForTerminal)\n" }.joined()
        }
        return out
    }

    /// `  key: value` on a line of its own.
    private static func entry(_ key: String, _ value: String?) -> String {
        "  \(key.escapedForTerminal): \((value ?? "").escapedForTerminal)\n"
    }
}

extension CrashReport {
    /// One line per frame (more for inlined frames): index, image, address, function and location.
    fileprivate func renderFrames(_ frames: [Frame], omission: Omission?) -> String {
        var out = ""
        for frame in frames {
            let imageName =
                image(of: frame).map { String($0.path.split(separator: "/").last ?? "").escapedForTerminal } ?? "???"
            let prefix =
                String(frame.index).padded(4)
                + imageName.padded(28) + " " + frame.address
            if frame.symbols.isEmpty {
                out += prefix + " " + (frame.imageOffset.map { "\(imageName) + \($0)" } ?? "") + "\n"
            }
            for (position, symbol) in frame.symbols.enumerated() {
                let location =
                    symbol.file.map { file in " (\(file.escapedForTerminal)\(symbol.line.map { ":\($0)" } ?? ""))" }
                    ?? ""
                let lead = position == 0 ? prefix : String(repeating: " ", count: prefix.count)
                let marker =
                    (frame.asyncResume == true && position == 0 ? "[async] " : "")
                    + (symbol.inlined ? "[inlined] " : "")
                out += lead + " " + marker + symbol.function.escapedForTerminal + location + "\n"
            }
            if let omission, omission.omittedAfterIndex == frame.index {
                out += "    ... \(omission.count) frames omitted ...\n"
            }
        }
        return out
    }
}

extension String {
    /// Left-aligned in a column of `width` characters (never cut).
    fileprivate func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

extension CrashReport {
    /// How many frames were named from debug info, from symbol tables, and not at all; nil for a
    /// report that predates `Frame.symbolication`.
    public var symbolicationSummary: String? {
        guard frames.contains(where: { $0.symbolication != nil }) else { return nil }
        let debugInfo = frames.filter { $0.symbolication == .debugInfo }.count
        let symbolTable = frames.filter { $0.symbolication == .symbolTable }.count
        return "\(debugInfo) frames from debug info, \(symbolTable) from symbol tables, "
            + "\(frames.count - debugInfo - symbolTable) unnamed"
    }
}
