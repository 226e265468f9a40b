import Foundation
import Testing

/// The collector as a separate process (for SIGKILL and the browser test).
final class CollectorProcess: @unchecked Sendable {
    let process: Process
    let baseURL: String
    let ingestKey: String
    let adminToken: String

    static var executable: String {
        if let path = ProcessInfo.processInfo.environment["BLACKBOX_COLLECTOR_BIN"] { return path }
        // Next to the test bundle: .build/<triple>/debug/
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while directory.path != "/"
            && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("blackbox-collector").path)
        {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("blackbox-collector").path
    }

    init(dataDirectory: String, port: Int = 0, arguments: [String] = []) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["serve", "--data-dir", dataDirectory, "--port", "\(port)", "--quiet"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var seen = ""
        // The banner is one write; its "database:" line comes after the address and before the keys
        // (which only the instance that created the first project prints).
        while !seen.contains("  database:") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        func value(_ label: String) -> String {
            seen.split(separator: "\n").first { $0.contains(label) }.map { String($0.split(separator: " ").last ?? "") }
                ?? ""
        }
        baseURL = value("listening on")
        ingestKey = value("ingest key:")
        adminToken = value("admin token:")
    }

    func kill(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
        process.waitUntilExit()
    }
}
