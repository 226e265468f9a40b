import Testing

@testable import Blackbox

@Suite struct LevelSettingsTests {
    @Test func longestPrefixWins() {
        let settings = LevelSettings(defaultLevel: .info, labelLevels: ["net": .debug, "net.http": .error])
        #expect(settings.level(for: "app") == .info)
        #expect(settings.level(for: "net") == .debug)
        #expect(settings.level(for: "network") == .debug)
        #expect(settings.level(for: "net.http.client") == .error)
    }

    @Test func environmentSyntax() throws {
        let settings = try LevelSettings(parsing: " warning , net=debug,db.pool = trace ")
        #expect(settings.defaultLevel == .warning)
        #expect(settings.labelLevels == ["net": .debug, "db.pool": .trace])
        let layered = try LevelSettings(parsing: "net=error", base: settings)
        #expect(layered.defaultLevel == .warning)
        #expect(layered.labelLevels["net"] == .error)
        #expect(try LevelSettings(parsing: "OFF").defaultLevel == .off)
    }

    @Test func environmentErrorsAreSpecific() {
        #expect(throws: BlackboxError.self) { try LevelSettings(parsing: "loud") }
        #expect(throws: BlackboxError.self) { try LevelSettings(parsing: "net=") }
        #expect(throws: BlackboxError.self) { try LevelSettings(parsing: "=debug") }
        do {
            _ = try LevelSettings(parsing: "info,net=chatty")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("net=chatty"))
        }
    }
}
