import BlackboxFormat
import BlackboxSymbols
import Runtime

/// The calling thread's stack as addresses, with the image map: what a failed assertion or a
/// captured error takes on the caller's thread. Taking it costs microseconds; naming it
/// (`named()`) loads the images' debug info and costs seconds of CPU the first time in a process,
/// so it happens later, on `ReportNaming`'s thread.
struct CapturedStack: Sendable {
    let backtrace: Backtrace
    let images: ImageMap

    /// Frames a report keeps; deeper ones are cut (a runaway recursion's report stays small).
    static let frameLimit = 128

    /// The images come from the dynamic loader (`LoadedImages`), never `ImageMap.capture()`, which
    /// can fault on a file unmapped meanwhile.
    static func capture() -> CapturedStack? {
        guard let images = LoadedImages.capture(),
            let backtrace = try? Backtrace.capture(limit: frameLimit, images: images)
        else { return nil }
        return CapturedStack(backtrace: backtrace, images: images)
    }

    /// The images as a report lists them.
    var reportImages: [CrashReport.Image] {
        images.map { image in
            let base = UInt64(image.baseAddress) ?? 0
            return CrashReport.Image(
                path: image.path ?? image.name ?? "?", bias: hex(base), start: hex(base),
                end: hex(UInt64(image.endOfText) ?? 0), buildID: image.uniqueID.map(lowercaseHex))
        }
    }

    /// The frames with their addresses and images only: what the report holds until it is named
    /// (the collector names such frames from uploaded debug files, as it does a stripped crash's).
    var unnamedFrames: [CrashReport.Frame] {
        backtrace.frames.compactMap { captured -> CrashReport.Frame? in
            let pc = captured.originalProgramCounter
            guard !pc.isNull else { return nil }
            return frame(at: pc)
        }.enumerated().map { index, frame in
            var frame = frame
            frame.index = index
            return frame
        }
    }

    /// The frames named in-process by Swift's `Runtime` module (demangled names, inlined frames,
    /// file:line), Blackbox's own frames at the top left out; nil when the runtime cannot symbolicate.
    func named() -> [CrashReport.Frame]? {
        guard
            let symbolicated = backtrace.symbolicated(with: images, options: [.showInlineFrames, .showSourceLocations])
        else { return nil }
        // Symbolicated frames list inlined frames first, then the real frame they belong to.
        var frames: [CrashReport.Frame] = []
        var pending: [CrashReport.Symbol] = []
        for frame in symbolicated.frames {
            if let symbol = frame.symbol {
                // The runtime's own demangling, in full: the Runtime module's names leave the module out
                // (`checkout(cart:)`), and the collector tells the app's frames from Blackbox's and the
                // dependencies' by it, and groups them with the same functions named by llvm-symbolizer.
                let function = SwiftDemangler.demangle(symbol.rawName) ?? symbol.name
                pending.append(
                    CrashReport.Symbol(
                        function: function, mangledName: symbol.rawName == function ? nil : symbol.rawName,
                        file: symbol.sourceLocation?.path, line: symbol.sourceLocation?.line,
                        column: symbol.sourceLocation?.column, inlined: frame.inlined))
            }
            if frame.inlined { continue }
            let pc = frame.captured.originalProgramCounter
            if pc.isNull {
                pending = []
                continue
            }
            var entry = self.frame(at: pc)
            entry.index = frames.count
            entry.symbols = pending
            entry.symbolication =
                pending.isEmpty ? nil : pending.contains { $0.file != nil } ? .debugInfo : .symbolTable
            frames.append(entry)
            pending = []
        }
        return Self.withoutMachinery(frames)
    }

    private func frame(at pc: Backtrace.Address) -> CrashReport.Frame {
        let address = UInt64(pc) ?? 0
        var entry = CrashReport.Frame(index: 0, address: hex(address))
        if let index = images.indexOfImage(at: pc) {
            entry.imageIndex = index
            entry.imageOffset = hex(address &- (UInt64(images[index].baseAddress) ?? 0))
        }
        return entry
    }

    /// The report starts at the caller: the frames of the assertion and capture machinery go.
    static func withoutMachinery(_ frames: [CrashReport.Frame]) -> [CrashReport.Frame] {
        let machinery = [
            "AssertionReporter.", "AssertionFailure.", "ErrorCapture.", "CapturedStack.", "Blackbox.capture(",
        ]
        // A log call's capture (`error:`): Blackbox's handler and swift-log's frames above the app's
        // call. Judged by a frame's own function only: swift-log's `Logger.error` is inlinable, and a
        // release build inlines it into the app's frame, which must stay.
        let logCall = ["BlackboxLogHandler.", "Logging.Logger.", "Logging.LogHandler.", "Logging.MultiplexLogHandler."]
        // The public entry points, named the Runtime's way (`Blackbox.ensure(_:_:level:file:…)`) or
        // llvm-symbolizer's (`Blackbox.ensure(_: @autoclosure () -> Swift.Bool, …)`).
        let entryPoints = ["ensure", "bug", "unreachable"]
        func isMachinery(_ name: String) -> Bool {
            machinery.contains { name.contains($0) }
                || entryPoints.contains { name.hasPrefix("Blackbox.\($0)(") || name.hasPrefix("\($0)(_:") }
        }
        guard
            let caller = frames.firstIndex(where: { frame in
                let function = frame.symbols.last?.function ?? ""
                return !frame.symbols.contains { isMachinery($0.function) }
                    && !logCall.contains { function.contains($0) }
            }),
            caller > 0
        else { return frames }
        return Array(frames[caller...]).enumerated().map { index, frame in
            var frame = frame
            frame.index = index
            return frame
        }
    }

    /// The first frames as log-line text: names where known, else image and offset.
    static func text(_ frames: [CrashReport.Frame], images: [CrashReport.Image]) -> String {
        guard !frames.isEmpty else { return "(no backtrace)" }
        return frames.prefix(32).map { frame in
            if let symbol = frame.symbols.last {
                let location = symbol.file.map { " at \($0):\(symbol.line ?? 0)" } ?? ""
                return "  \(frame.index) \(frame.address) \(symbol.function)\(location)"
            }
            let image = frame.imageIndex.flatMap { images.indices.contains($0) ? images[$0].path : nil }
            let place = image.map {
                " \($0.split(separator: "/").last.map(String.init) ?? $0)+\(frame.imageOffset ?? "?")"
            }
            return "  \(frame.index) \(frame.address)\(place ?? "")"
        }.joined(separator: "\n")
    }
}
