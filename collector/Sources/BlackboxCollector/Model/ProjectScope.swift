/// The one project a request may read. Every `ProjectReader` query takes one and filters by it in
/// SQL, so a handler cannot forget the check and show another project's data. Made by
/// authentication (`AuthenticatedContext`) from an admin key, and by operator commands.
public struct ProjectScope: Sendable, Equatable {
    public let projectID: Int64

    init(projectID: Int64) {
        self.projectID = projectID
    }

    /// The project a key belongs to.
    init(of key: APIKey) {
        self.projectID = key.projectID
    }
}
