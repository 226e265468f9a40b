// swift-tools-version:6.1
import PackageDescription

// What an app resolves is what it uses: `Blackbox` (logging, crash capture, assertions) needs swift-log
// and swift-atomics only. The uploader's HTTP, zip and crypto packages, and the CLI's argument parser,
// sit behind package traits, so an app that does not enable them never resolves or builds them:
//   .package(url: "https://github.com/…/blackbox", from: "0.1.0")                       // Blackbox
//   .package(url: "https://github.com/…/blackbox", from: "0.1.0", traits: ["Upload"])   // + BlackboxUpload
//   .package(url: "https://github.com/…/blackbox", from: "0.1.0", traits: ["Hummingbird"])  // + BlackboxHummingbird
//   .package(url: "https://github.com/…/blackbox", from: "0.1.0", traits: ["Vapor"])  // + BlackboxVapor
// This repository's own builds enable `Tools` (the CLI, which implies `Upload`): see the Makefile.
let upload: TargetDependencyCondition? = .when(traits: ["Upload"])
let tools: TargetDependencyCondition? = .when(traits: ["Tools"])
let hummingbird: TargetDependencyCondition? = .when(traits: ["Hummingbird"])
let vapor: TargetDependencyCondition? = .when(traits: ["Vapor"])
let serviceLifecycle: TargetDependencyCondition? = .when(traits: ["ServiceLifecycle"])

let package = Package(
    name: "blackbox",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Blackbox", targets: ["Blackbox"]),
        .library(name: "BlackboxFormat", targets: ["BlackboxFormat"]),
        .library(name: "BlackboxCompression", targets: ["BlackboxCompression"]),
        .library(name: "BlackboxSymbols", targets: ["BlackboxSymbols"]),
        // The system-call floor (EINTR, whole writes, errors that keep errno) of the library and the
        // collector.
        .library(name: "BlackboxSystem", targets: ["BlackboxSystem"]),
        // The Sentry protocol (DSN, envelope, event), written once for the app's delivery and the
        // collector's ingest. Foundation only.
        .library(name: "BlackboxSentry", targets: ["BlackboxSentry"]),
        // Domain/code errors with localization and recovery. Separate because it needs Foundation.
        .library(name: "BlackboxErrors", targets: ["BlackboxErrors"]),
        // Bundles and the background uploader. Separate because its HTTP client brings SwiftNIO; empty
        // unless the `Upload` trait is enabled.
        .library(name: "BlackboxUpload", targets: ["BlackboxUpload"]),
        // Request scopes and logger wiring for Hummingbird 2; empty unless the `Hummingbird` trait is
        // enabled (Examples/hummingbird-service).
        .library(name: "BlackboxHummingbird", targets: ["BlackboxHummingbird"]),
        // Request scopes and the one-call logging setup for Vapor 4; empty unless the `Vapor` trait is
        // enabled (Examples/vapor-service).
        .library(name: "BlackboxVapor", targets: ["BlackboxVapor"]),
        .library(name: "BlackboxServiceLifecycle", targets: ["BlackboxServiceLifecycle"]),
        // Temporary directories and the like for both packages' tests (never linked by apps).
        .library(name: "BlackboxTestSupport", targets: ["BlackboxTestSupport"]),
        .executable(name: "blackbox", targets: ["blackbox"]),
        .executable(name: "blackbox-example", targets: ["blackbox-example"]),
    ],
    traits: [
        .trait(
            name: "Upload",
            description:
                "BlackboxUpload: bundles and the background uploader (SwiftNIO, AsyncHTTPClient, swift-crypto, ZIPFoundation)"
        ),
        .trait(
            name: "ServiceLifecycle",
            description:
                "BlackboxServiceLifecycle: the Blackbox runtime as a service of a swift-service-lifecycle ServiceGroup"
        ),
        .trait(
            name: "Hummingbird", description: "BlackboxHummingbird: a request-scope middleware for Hummingbird 2",
            enabledTraits: ["ServiceLifecycle"]),
        .trait(name: "Vapor", description: "BlackboxVapor: a request-scope middleware and logging setup for Vapor 4"),
        .trait(
            name: "Tools", description: "the blackbox command-line tool and the example app (and every test)",
            enabledTraits: ["Upload", "ServiceLifecycle"]),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/vapor/vapor", from: "4.100.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    ],
    targets: [
        // zlib, for gzip-compressing rotated archives. A module map only: no C code of ours.
        .systemLibrary(name: "CBlackboxZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The async-signal-safe half of crash capture. libunwind is loaded with dlopen at install time
        // (only its header is needed to build), so it never replaces libgcc's unwinder process-wide.
        .target(name: "CCrashHandler"),
        // Report and bundle formats shared by the library, the CLI and the collector.
        .target(name: "BlackboxFormat"),
        // gzip and CRC-32 in memory, bounded: for the CLI and the collector, which read archives that
        // come from elsewhere. Apart from `Blackbox`, so that the collector needs no logging library
        // to read a bundle.
        .target(name: "BlackboxCompression", dependencies: ["CBlackboxZlib"]),
        // Build-ids, sections and symbol tables of ELF files on disk, bounded against malformed
        // files: for crash processing, `blackbox symbols` and the collector's symbol store.
        .target(name: "BlackboxSystem"),
        .target(name: "BlackboxSymbols", dependencies: ["BlackboxFormat", "BlackboxSystem"]),
        .target(name: "BlackboxSentry", dependencies: ["BlackboxFormat"]),
        .target(
            name: "Blackbox",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Atomics", package: "swift-atomics"),
                "CBlackboxZlib",
                "CCrashHandler",
                "BlackboxFormat",
                "BlackboxSymbols",
                "BlackboxSystem",
            ]
        ),
        .target(name: "BlackboxErrors", dependencies: ["Blackbox", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "BlackboxUpload",
            dependencies: [
                "Blackbox", "BlackboxFormat", "BlackboxCompression", "BlackboxSymbols", "BlackboxSentry",
                "BlackboxSystem", .product(name: "Logging", package: "swift-log"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation", condition: upload),
                .product(name: "Crypto", package: "swift-crypto", condition: upload),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: upload),
                .product(name: "NIOCore", package: "swift-nio", condition: upload),
                .product(name: "NIOPosix", package: "swift-nio", condition: upload),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: upload),
            ]
        ),
        .target(
            name: "BlackboxHummingbird",
            dependencies: [
                "Blackbox", .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
            ]),
        .target(
            name: "BlackboxServiceLifecycle",
            dependencies: [
                "Blackbox",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
            ]),
        .target(
            name: "BlackboxVapor",
            dependencies: [
                "Blackbox", .product(name: "Logging", package: "swift-log"),
                .product(name: "Vapor", package: "vapor", condition: vapor),
            ]),
        // The command-line tool: show, logs, bundle, upload, doctor.
        .executableTarget(
            name: "blackbox",
            dependencies: [
                "Blackbox", "BlackboxFormat", "BlackboxUpload", "BlackboxCompression", "BlackboxSymbols",
                "BlackboxSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: tools),
            ]
        ),
        .executableTarget(
            name: "blackbox-example",
            dependencies: ["Blackbox", "BlackboxUpload", .product(name: "Logging", package: "swift-log")]),
        // Child processes the tests start, kill and inspect (never run by users).
        .executableTarget(
            name: "blackbox-test-child",
            dependencies: [
                "Blackbox", "BlackboxErrors", "BlackboxFormat", "BlackboxServiceLifecycle",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
            ]),
        // Crashes on purpose for the crash-capture tests, in debug and release builds.
        .target(name: "CBlackboxTestCrashes", dependencies: ["CCrashHandler"]),
        .executableTarget(
            name: "blackbox-crash-child",
            dependencies: ["Blackbox", "CBlackboxTestCrashes", .product(name: "Logging", package: "swift-log")]),
        .target(name: "BlackboxTestSupport"),
        // `make bench` builds this in release mode; see bench/README.md.
        .executableTarget(
            name: "blackbox-bench", dependencies: ["Blackbox", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "BlackboxTests",
            dependencies: [
                "Blackbox", "BlackboxFormat", "BlackboxCompression", "BlackboxSymbols", "BlackboxSystem",
                "BlackboxTestSupport", "BlackboxServiceLifecycle", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
                .product(
                    name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle", condition: serviceLifecycle),
            ]),
        .testTarget(
            name: "BlackboxUploadTests",
            dependencies: [
                "BlackboxUpload", "Blackbox", "BlackboxFormat", "BlackboxSentry", "BlackboxTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: upload),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto", condition: upload),
                .product(name: "ZIPFoundation", package: "ZIPFoundation", condition: upload),
                .product(name: "NIOCore", package: "swift-nio", condition: upload),
                .product(name: "NIOPosix", package: "swift-nio", condition: upload),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: upload),
            ]),
        .testTarget(name: "BlackboxSentryTests", dependencies: ["BlackboxSentry", "BlackboxTestSupport"]),
        .testTarget(
            name: "BlackboxErrorsTests",
            dependencies: [
                "BlackboxErrors", "Blackbox", "BlackboxTestSupport", .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Localization")]),
    ],
    swiftLanguageModes: [.v6]
)
