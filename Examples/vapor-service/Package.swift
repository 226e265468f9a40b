// swift-tools-version:6.1
import Foundation
import PackageDescription

// A path dependency's package name is its directory's name: whatever this checkout is called.
let blackbox = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
    .standardized.lastPathComponent.lowercased()

// A Vapor 4 app that adopts Blackbox the way docs/servers.md says. CI builds and runs it
// (scripts/examples-check.sh): a request that crashes leaves a report naming its route, method and id.
let package = Package(
    name: "vapor-service",
    platforms: [.macOS(.v15)],
    dependencies: [
        // An app writes .package(url: "https://github.com/OWNER/blackbox", from: "0.2.0", traits: [...]).
        .package(path: "../..", traits: ["Vapor"]),
        .package(url: "https://github.com/vapor/vapor", from: "4.100.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "vapor-service",
            dependencies: [
                .product(name: "Blackbox", package: blackbox),
                .product(name: "BlackboxVapor", package: blackbox),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Logging", package: "swift-log"),
            ])
    ],
    swiftLanguageModes: [.v6]
)
