// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "blackbox",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Blackbox", targets: ["Blackbox"]),
        .library(name: "BlackboxFormat", targets: ["BlackboxFormat"]),
        // Domain/code errors with localization and recovery. Separate because it needs Foundation.
        .library(name: "BlackboxErrors", targets: ["BlackboxErrors"]),
        .executable(name: "blackbox", targets: ["blackbox"]),
        .executable(name: "blackbox-example", targets: ["blackbox-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics", exact: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        // zlib, for gzip-compressing rotated archives. A module map only: no C code of ours.
        .systemLibrary(name: "CBlackboxZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The async-signal-safe half of crash capture. libunwind is loaded with dlopen at install time
        // (only its header is needed to build), so it never replaces libgcc's unwinder process-wide.
        .target(name: "CCrashHandler"),
        // Report and bundle formats shared by the library, the CLI and the collector.
        .target(name: "BlackboxFormat"),
        .target(
            name: "Blackbox",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Atomics", package: "swift-atomics"),
                "CBlackboxZlib",
                "CCrashHandler",
                "BlackboxFormat",
            ]
        ),
        .target(name: "BlackboxErrors", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The command-line tool (reading reports and logs; bundling and upload come with the uploader).
        .executableTarget(
            name: "blackbox",
            dependencies: [
                "Blackbox", "BlackboxFormat", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "blackbox-example", dependencies: ["Blackbox", .product(name: "Logging", package: "swift-log")]),
        // Child processes the tests start, kill and inspect (never run by users).
        .executableTarget(
            name: "blackbox-test-child",
            dependencies: ["Blackbox", "BlackboxErrors", .product(name: "Logging", package: "swift-log")]),
        // Crashes on purpose for the crash-capture tests, in debug and release builds.
        .target(name: "CBlackboxTestCrashes"),
        .executableTarget(
            name: "blackbox-crash-child",
            dependencies: ["Blackbox", "CBlackboxTestCrashes", .product(name: "Logging", package: "swift-log")]),
        // `make bench` builds this in release mode; see bench/README.md.
        .executableTarget(
            name: "blackbox-bench", dependencies: ["Blackbox", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "BlackboxTests",
            dependencies: ["Blackbox", "BlackboxFormat", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "BlackboxErrorsTests",
            dependencies: ["BlackboxErrors", .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Localization")]),
    ],
    swiftLanguageModes: [.v6]
)
