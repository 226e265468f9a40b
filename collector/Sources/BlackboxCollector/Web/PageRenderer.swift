import Foundation
import Hummingbird
import Mustache

/// What one page shows: the values its template (`Web/Templates/<template>.mustache`) reads, under the
/// names it reads them. Templates find them by reflection, so every value is a stored property.
///
/// Mustache looks a name up in the enclosing sections when the innermost value lacks it (an
/// optional that is nil included): a value a template tests inside a repeated section is never
/// optional there, but false or empty, or a row would show what its page holds under that name.
protocol PageModel: Encodable {
    static var template: String { get }
}

/// Turns page models into HTML responses with the web UI's templates (swift-mustache). Every value
/// from an upload is HTML-escaped by the templates (`{{…}}`); pages work without JavaScript.
struct PageRenderer: Sendable {
    let library: MustacheLibrary

    /// The templates, read and parsed once per process (they are the build's resources): parsing them
    /// took 10 ms, which every router-mode test paid again.
    static func loadTemplates() async throws -> PageRenderer {
        try await loaded.value
    }

    private static let loaded = Task {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("Templates").path else {
            throw StorageError.notFound("the web UI templates")
        }
        return PageRenderer(library: try await MustacheLibrary(directory: directory))
    }

    func render(_ page: some PageModel, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: html(page))))
    }

    func html(_ page: some PageModel) -> String {
        let template = type(of: page).template
        return library.render(page, withTemplate: template) ?? "template \(template) is missing"
    }

    func notFound() -> Response {
        message("Not found", "There is no such page in this project.", status: .notFound)
    }

    /// A page that only says why nothing else is shown.
    func message(_ title: String, _ text: String, status: HTTPResponse.Status) -> Response {
        render(MessagePage(title: title, error: text), status: status)
    }
}

struct MessagePage: PageModel {
    static let template = "message"
    let title: String
    let error: String
}

/// How pages write a time: ISO 8601, UTC, as `<time datetime>` wants it.
func iso(_ date: Date) -> String { date.formatted(.iso8601) }

/// Counts by name, the largest first: "1.2 (40), 1.1 (3)".
func countSummary(_ counts: [String: Int]) -> String {
    counts.sorted { $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value }.map { "\($0.key) (\($0.value))" }
        .joined(separator: ", ")
}
