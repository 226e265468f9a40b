#if Upload
    import Blackbox
    import BlackboxUpload
    import Logging

    #if canImport(Glibc)
        import Glibc
    #endif

    // An app that logs through Blackbox: `make example` runs it once, `make demo` runs it against a
    // collector, first with --crash (it fails an `ensure` and then crashes), then again so that it
    // uploads the crash report on its next start.
    //
    //   blackbox-example [DIRECTORY] [--crash] [--collector URL --key KEY] [--serve SECONDS --live-interval MS
    //                    --rotate-bytes N]
    //   (without --collector, SENTRY_DSN in the environment sends to a Sentry server instead)
    //   --serve: logs a `tick n=<N>` line every 50 ms for SECONDS, as a running server would, while
    //   the active log's new lines are shipped every --live-interval (the live-log tests use it;
    //   --live-interval 0 turns live shipping off). --burst LINES logs LINES lines of 100 bytes at
    //   once, then serves (the shipping cost's measurement in docs/uploading.md). --requests N serves N
    //   requests a tick through `Blackbox.handleRequest` (--max-requests M: M in all), every tenth
    //   answered 500, and
    //   --request-interval MS sends their counts that often while it runs (the live request-health
    //   test uses them).
    struct ExampleArguments {
        var directory: String?
        var collectorURL: String?
        var collectorKey: String?
        var crash = false
        var serveSeconds: Double?
        var liveIntervalMilliseconds: Int?
        var rotateBytes: UInt64?
        var burstLines = 0
        var requestsPerTick = 0
        var maxRequests = Int.max
        var requestIntervalMilliseconds: Int?

        init(_ arguments: [String]) {
            var rest = arguments[...]
            while let argument = rest.popFirst() {
                switch argument {
                case "--crash": crash = true
                case "--collector": collectorURL = rest.popFirst()
                case "--key": collectorKey = rest.popFirst()
                case "--serve": serveSeconds = rest.popFirst().flatMap(Double.init)
                case "--live-interval": liveIntervalMilliseconds = rest.popFirst().flatMap(Int.init)
                case "--rotate-bytes": rotateBytes = rest.popFirst().flatMap(UInt64.init)
                case "--burst": burstLines = rest.popFirst().flatMap(Int.init) ?? 0
                case "--requests": requestsPerTick = rest.popFirst().flatMap(Int.init) ?? 0
                case "--max-requests": maxRequests = rest.popFirst().flatMap(Int.init) ?? Int.max
                case "--request-interval": requestIntervalMilliseconds = rest.popFirst().flatMap(Int.init)
                default: directory = argument
                }
            }
        }
    }
    let parsed = ExampleArguments(Array(CommandLine.arguments.dropFirst()))
    let collectorURL = parsed.collectorURL
    let collectorKey = parsed.collectorKey
    let crash = parsed.crash
    let directory = parsed.directory ?? BlackboxConfiguration.defaultDirectory(appName: "blackbox-example")

    var configuration = BlackboxConfiguration(appName: "blackbox-example", directory: directory)
    configuration.appVersion = "1.0"
    configuration.appBuild = "42"
    configuration.sinks = [.console, .file]
    configuration.levels = LevelSettings(defaultLevel: .info, labelLevels: ["example.db": .debug])
    if let bytes = parsed.rotateBytes { configuration.rotation.maxFileSize = bytes }
    var upload: CollectorUpload?
    var sentry: SentryDelivery?
    do {
        if let collectorURL, let collectorKey {
            upload = CollectorUpload(endpoint: try CollectorEndpoint(url: collectorURL, key: collectorKey))
            if let milliseconds = parsed.liveIntervalMilliseconds {
                upload?.liveLogInterval = milliseconds > 0 ? .milliseconds(milliseconds) : nil
            }
            if let milliseconds = parsed.requestIntervalMilliseconds {
                upload?.bundles.liveRequestInterval = .milliseconds(milliseconds)
            }
            configuration.delivery = upload
        } else if let delivery = try SentryDelivery.fromEnvironment() {
            // SENTRY_DSN (with SENTRY_RELEASE, SENTRY_ENVIRONMENT) sends to a Sentry server instead.
            sentry = delivery
            configuration.delivery = delivery
        }
    } catch {
        FileHandleOutput.standardError("blackbox-example: \(error)")
        exit(64)
    }

    let runtime: BlackboxRuntime
    do {
        runtime = try Blackbox.start(configuration)
    } catch {
        FileHandleOutput.standardError("blackbox-example: \(error)")
        exit(1)
    }
    if runtime.core.recovery.records > 0 {
        print("recovered \(runtime.core.recovery.records) lines a previous run left in the journal")
    }

    var logger = Logger(label: "example.app")
    logger[metadataKey: "run"] = "\(getpid())"
    logger.info("example app started")
    logger.notice("signed in", metadata: ["user": "\("alice@example.com", sensitivity: .sensitive)"])
    Logger(label: "example.db").debug("connection pool ready", metadata: ["size": "4"])

    if let fast = Blackbox.fastLogger("example.hot") {
        for i in 0..<5 {
            fast.info("request id=\(i) user=\("bob") took \(Double(i) * 1.5) ms ok=\(i % 2 == 0)")
        }
    }
    logger.warning("disk almost full", metadata: ["free": "3%"])

    if crash {
        // In a debug build `ensure` would trap; the demo wants the release behaviour: log and report.
        Assertions.policy = .neverTrap
        checkout(cart: [], logger: logger)
        Blackbox.flush()
        print("price: \(price(at: 3, in: [10, 20, 30], logger: logger))")
    }

    /// Fails an `ensure`: a non-fatal report, and the app goes on.
    func checkout(cart: [Int], logger: Logger) {
        if ensure(!cart.isEmpty, "checkout with an empty cart") == false {
            logger.error("checkout refused: the cart is empty")
        }
    }

    /// The demo's crash: reads past the end of the list (index out of range).
    func price(at index: Int, in prices: [Int], logger: Logger) -> Int {
        logger.critical("about to read price \(index) of \(prices.count)")
        return prices[index]
    }

    if parsed.burstLines > 0 {
        let burst = Logger(label: "example.burst")
        let padding = String(repeating: "x", count: 40)
        for n in 0..<parsed.burstLines { burst.info("burst n=\(n) \(padding)") }
    }
    if let seconds = parsed.serveSeconds {
        let serving = Logger(label: "example.server")
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var tick = 0
        var served = 0
        while ContinuousClock.now < end {
            serving.info("tick n=\(tick) pid=\(getpid())")
            for _ in 0..<min(parsed.requestsPerTick, parsed.maxRequests - served) {
                served += 1
                let status = served % 10 == 0 ? 500 : 200
                _ = try? await Blackbox.handleRequest(
                    in: DiagnosticScope(route: "/tick", method: "GET", requestID: "r-\(served)"), status: { $0 },
                    statusOfError: { _ in nil }, handle: { status })
            }
            if parsed.requestsPerTick > 0 { print("served \(served)") }
            if tick == 0 { print("serving") }
            tick += 1
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    Blackbox.flush()
    if let upload {
        if await upload.waitForStartPass(timeout: .seconds(30)) {
            print("uploaded what earlier runs left to \(collectorURL ?? "")")
        } else {
            print("the upload did not finish in 30 s; it continues on the next start")
        }
    }
    if let sentry {
        if await sentry.waitForStartPass(timeout: .seconds(30)) {
            print("sent what earlier runs left to \(sentry.dsn)")
        } else {
            print("the delivery did not finish in 30 s; it continues on the next start")
        }
    }

    print("")
    print("Blackbox directory: \(directory)")
    print("Active log file:    \(directory)/logs/blackbox-example.log")
    print("Journal:            \(directory)/journal")
    print("Last lines:")
    for line in Blackbox.recentLines(3) { print("  \(line)") }

    enum FileHandleOutput {
        static func standardError(_ line: String) {
            let text = line + "\n"
            _ = text.utf8.withContiguousStorageIfAvailable { write(2, $0.baseAddress, $0.count) }
        }
    }
#else
    print("blackbox-example needs the Upload trait: swift build --traits Tools (or make example)")
#endif
