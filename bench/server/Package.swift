// swift-tools-version:6.1
import Foundation
import PackageDescription

// A path dependency's package name is its directory's name: whatever this checkout is called.
let blackbox = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    .standardized.lastPathComponent.lowercased()

// `make bench-server` (bench/README.md): a Hummingbird 2 service whose handler logs one line with 8
// metadata values, run under wrk with each log backend in turn by bench/server_run.py.
let package = Package(
    name: "bench-server",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "bench-server",
            dependencies: [
                .product(name: "Blackbox", package: blackbox),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
