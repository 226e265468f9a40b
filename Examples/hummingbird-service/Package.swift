// swift-tools-version:6.1
import Foundation
import PackageDescription

// A path dependency's package name is its directory's name: whatever this checkout is called.
let blackbox = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    .standardized.lastPathComponent.lowercased()

// A Hummingbird 2 service that adopts Blackbox the way docs/servers.md says. CI builds and runs it
// (scripts/examples-check.sh): a request that crashes leaves a report naming its route, method and id.
let package = Package(
    name: "hummingbird-service",
    platforms: [.macOS(.v15)],
    // Tracing with swift-otel is on unless the build says `--disable-default-traits`. CI's release build
    // (the stripped binary scripts/examples-check.sh ships) leaves it out: swift-otel brings
    // AsyncHTTPClient, SwiftNIO's TLS and HTTP/2 and a second BoringSSL, optimized, most of that build;
    // the debug build checks the tracing.
    traits: [
        .trait(name: "Tracing", description: "TRACING=1 traces every request with swift-otel"),
        .default(enabledTraits: ["Tracing"]),
    ],
    dependencies: [
        // An app writes .package(url: "https://github.com/OWNER/blackbox", from: "0.2.0", traits: [...]).
        .package(path: "../..", traits: ["Hummingbird"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        // Tracing, with the OTLP/HTTP exporter only (its default traits add gRPC too, a long build; with
        // no trait at all swift-otel 1.6 does not compile).
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .executableTarget(
            name: "hummingbird-service",
            dependencies: [
                .product(name: "Blackbox", package: blackbox),
                .product(name: "BlackboxHummingbird", package: blackbox),
                .product(name: "BlackboxServiceLifecycle", package: blackbox),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["Tracing"])),
            ])
    ],
    swiftLanguageModes: [.v6]
)
