// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "blackbox",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Blackbox", targets: ["Blackbox"]),
        .library(name: "BlackboxFormat", targets: ["BlackboxFormat"]),
        .library(name: "BlackboxCompression", targets: ["BlackboxCompression"]),
        .library(name: "BlackboxSymbols", targets: ["BlackboxSymbols"]),
        // Domain/code errors with localization and recovery. Separate because it needs Foundation.
        .library(name: "BlackboxErrors", targets: ["BlackboxErrors"]),
        // Bundles and the background uploader. Separate because its HTTP client brings SwiftNIO.
        .library(name: "BlackboxUpload", targets: ["BlackboxUpload"]),
        // Temporary directories and the like for both packages' tests (never linked by apps).
        .library(name: "BlackboxTestSupport", targets: ["BlackboxTestSupport"]),
        .executable(name: "blackbox", targets: ["blackbox"]),
        .executable(name: "blackbox-example", targets: ["blackbox-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics", exact: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", exact: "0.9.20"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
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
        .target(name: "BlackboxSymbols", dependencies: ["BlackboxFormat"]),
        .target(
            name: "Blackbox",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Atomics", package: "swift-atomics"),
                "CBlackboxZlib",
                "CCrashHandler",
                "BlackboxFormat",
                "BlackboxSymbols",
            ]
        ),
        .target(name: "BlackboxErrors", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(
            name: "BlackboxUpload",
            dependencies: [
                "Blackbox", "BlackboxFormat",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The command-line tool: show, logs, bundle, upload, doctor.
        .executableTarget(
            name: "blackbox",
            dependencies: [
                "Blackbox", "BlackboxFormat", "BlackboxUpload", "BlackboxCompression", "BlackboxSymbols",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "blackbox-example",
            dependencies: ["Blackbox", "BlackboxUpload", .product(name: "Logging", package: "swift-log")]),
        // Child processes the tests start, kill and inspect (never run by users).
        .executableTarget(
            name: "blackbox-test-child",
            dependencies: ["Blackbox", "BlackboxErrors", .product(name: "Logging", package: "swift-log")]),
        // Crashes on purpose for the crash-capture tests, in debug and release builds.
        .target(name: "CBlackboxTestCrashes"),
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
                "Blackbox", "BlackboxFormat", "BlackboxCompression", "BlackboxSymbols", "BlackboxTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "BlackboxUploadTests",
            dependencies: [
                "BlackboxUpload", "Blackbox", "BlackboxFormat", "BlackboxTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "BlackboxErrorsTests",
            dependencies: ["BlackboxErrors", .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Localization")]),
    ],
    swiftLanguageModes: [.v6]
)
