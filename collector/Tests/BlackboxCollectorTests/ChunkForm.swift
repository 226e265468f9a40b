import Foundation

/// sentry-cli's chunk upload body (`multipart/form-data`): one part per chunk, named by its sha1,
/// in the field `file` (`file_gzip` for a gzipped chunk).
enum ChunkForm {
    static let boundary = "bbx-test-boundary"
    static let contentType = "multipart/form-data; boundary=\(boundary)"

    struct Part {
        var name: String
        var bytes: Data
        var field = "file"
    }

    static func body(_ parts: [Part]) -> Data {
        var body = Data()
        for part in parts {
            body += Data(
                "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part.field)\"; filename=\"\(part.name)\"\r\n"
                    .utf8)
            body += Data("Content-Type: application/octet-stream\r\n\r\n".utf8) + part.bytes + Data("\r\n".utf8)
        }
        return body + Data("--\(boundary)--\r\n".utf8)
    }
}
