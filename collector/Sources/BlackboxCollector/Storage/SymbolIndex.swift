/// The symbol store's index: which symbol files a project has, by build-id. The files themselves are
/// blobs (`BlobStorage`, named by sha256).
public protocol SymbolIndex: Sendable {
    /// Stores the file's record unless the project has the same bytes for this build-id already;
    /// `created` says which.
    func addSymbolFile(_ file: NewSymbolFile) async throws -> (record: SymbolFile, created: Bool)
    /// The project's symbol file with these bytes, by their sha1 (sentry-cli's name for a file).
    func symbolFile(sha1: String, in scope: ProjectScope) async throws -> SymbolFile?
    /// The project's symbol files with any of these build-ids.
    func symbolFiles(buildIDs: [String], in scope: ProjectScope) async throws -> [SymbolFile]
    /// Most recently uploaded first.
    func symbolFiles(in scope: ProjectScope, page: Page) async throws -> [SymbolFile]
    /// Deletes the project's files of a build-id (only the one with `sha256` when given); returns them.
    func deleteSymbolFiles(buildID: String, sha256: String?, in scope: ProjectScope) async throws -> [SymbolFile]
    /// Which of `blobs` some symbol file (of any project) references.
    func referencedSymbolBlobs(_ blobs: [String]) async throws -> Set<String>
}
