// swift-tools-version:6.1
import PackageDescription

// The collector: receives bundles from apps and the CLI, stores them durably, groups crashes, serves a
// web UI and a JSON API. Its own package so apps never pull in a server or a database.
let package = Package(
    name: "blackbox-collector",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "blackbox-collector", targets: ["blackbox-collector"]),
        .executable(name: "blackbox-collector-bench", targets: ["blackbox-collector-bench"]),
    ],
    dependencies: [
        .package(name: "blackbox", path: "..", traits: ["Tools"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        // Brotli's decoder, for Sentry SDKs that send `Content-Encoding: br` (sentry-python does
        // whenever the `brotli` module is installed). A module map only: no C code of ours.
        .systemLibrary(name: "CBlackboxBrotli", pkgConfig: "libbrotlidec", providers: [.apt(["libbrotli-dev"])]),
        // OTLP's logs messages: the code protoc-gen-swift wrote from `proto/` (committed: building the
        // plugin costs minutes; `make otlp-proto` writes it again) and the rules for reading them.
        .target(
            name: "BlackboxOTLP",
            dependencies: [
                .product(name: "BlackboxFormat", package: "blackbox"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        .target(
            name: "BlackboxCollector",
            dependencies: [
                "BlackboxOTLP",
                "CBlackboxBrotli",
                .product(name: "BlackboxCompression", package: "blackbox"),
                .product(name: "BlackboxFormat", package: "blackbox"),
                .product(name: "BlackboxSentry", package: "blackbox"),
                .product(name: "BlackboxSymbols", package: "blackbox"),
                .product(name: "BlackboxSystem", package: "blackbox"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Webhook deliveries (Alerts/AlertDispatcher.swift).
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            resources: [.copy("Web/Templates"), .copy("Web/Static")]
        ),
        .executableTarget(
            name: "blackbox-collector",
            dependencies: [
                "BlackboxCollector",
                // The collector logs through Blackbox itself.
                .product(name: "Blackbox", package: "blackbox"),
                .product(name: "BlackboxServiceLifecycle", package: "blackbox"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Real PostgreSQL and nginx processes for the tests and the benchmark (never shipped).
        .target(
            name: "CollectorTestSupport", dependencies: [.product(name: "BlackboxTestSupport", package: "blackbox")]),
        // `make bench-collector`: concurrent clients on loopback against a collector process.
        .executableTarget(
            name: "blackbox-collector-bench",
            dependencies: [
                "BlackboxCollector", "BlackboxOTLP", "CollectorTestSupport",
                .product(name: "BlackboxCompression", package: "blackbox"),
                .product(name: "BlackboxTestSupport", package: "blackbox"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ]
        ),
        .testTarget(
            name: "BlackboxCollectorTests",
            dependencies: [
                "BlackboxCollector", "BlackboxOTLP", "CollectorTestSupport",
                .product(name: "BlackboxCompression", package: "blackbox"),
                .product(name: "BlackboxSentry", package: "blackbox"),
                .product(name: "BlackboxSymbols", package: "blackbox"),
                .product(name: "BlackboxTestSupport", package: "blackbox"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
