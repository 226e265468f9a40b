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
}
