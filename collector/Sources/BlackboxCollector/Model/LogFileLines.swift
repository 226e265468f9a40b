/// One log file's lines, as the indexer read them from its bundle.
public struct LogFileLines: Sendable {
    public var fileID: Int64
    public var lines: [String]
    public init(fileID: Int64, lines: [String]) {
        self.fileID = fileID
        self.lines = lines
    }
}
