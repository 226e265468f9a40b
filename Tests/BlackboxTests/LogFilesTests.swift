import BlackboxTestSupport
import Foundation
import Testing

@testable import Blackbox

@Suite("Log file names, as the uploader and the CLI see them")
struct LogFilesTests {
    @Test("archives oldest first, once each while compression is in progress; base names from both kinds of file")
    func archivesAndBaseNames() throws {
        let directory = TemporaryDirectory()
        let names = [
            "shop.log", "shop.20261121T110000.000Z--20261121T120000.000Z.log",
            "shop.20261121T100000.000Z--20261121T110000.000Z.log.gz",
            // Compression in progress: both forms exist for a moment.
            "shop.20261121T120000.000Z--20261121T130000.000Z.log",
            "shop.20261121T120000.000Z--20261121T130000.000Z.log.gz",
            "my.app.20261121T100000.000Z--20261121T110000.000Z-2.log", "notes.txt", "shop.20261121--bad.log",
        ]
        for name in names { _ = FileManager.default.createFile(atPath: "\(directory.path)/\(name)", contents: Data()) }
        #expect(
            LogFiles.archives(inDirectory: directory.path, baseName: "shop") == [
                "shop.20261121T100000.000Z--20261121T110000.000Z.log.gz",
                "shop.20261121T110000.000Z--20261121T120000.000Z.log",
                "shop.20261121T120000.000Z--20261121T130000.000Z.log",
            ])
        #expect(LogFiles.baseNames(inDirectory: directory.path) == ["my.app", "shop"])
    }
}
