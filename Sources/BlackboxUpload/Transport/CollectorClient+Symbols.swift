#if Upload
    import AsyncHTTPClient
    import Foundation
    import NIOCore

    /// The symbol store's side of the collector API, for `blackbox symbols upload` (docs/symbols.md).
    extension CollectorClient {
        /// What the collector answered about a batch of build-ids.
        public enum SymbolCheck: Sendable, Equatable {
            /// The build-ids the project has debug info for.
            case present(Set<String>)
            case refused(ServerAnswer)
        }

        /// Asks, in one request, which of `buildIDs` the project has debug info for already.
        public func checkSymbols(buildIDs: [String]) async throws(ConnectionProblem) -> SymbolCheck {
            struct Question: Encodable { var buildIds: [String] }
            struct Answer: Decodable { var present: [String] }
            var request = HTTPClientRequest(url: endpoint.url("/api/v1/symbols/check"))
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(endpoint.key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            let body: [UInt8]
            let status: Int
            do {
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(Question(buildIds: buildIDs))))
                let response = try await http.execute(request, timeout: .seconds(60))
                status = Int(response.status.code)
                body = Array(buffer: try await response.body.collect(upTo: 16 << 20))
            } catch {
                throw ConnectionProblem(description: Self.describe(error))
            }
            guard status == 200 else { return .refused(ServerAnswer(status: status, body: body)) }
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)) else {
                return .refused(
                    ServerAnswer(status: status, code: nil, message: "not the answer of a Blackbox collector"))
            }
            return .present(Set(answer.present))
        }

        /// Sends one symbol file, gzip-compressed (`compressedPath`), for `buildID` under the name `name`.
        /// Never throws: every failure is an outcome (`stored(duplicate:)` when the collector had the
        /// same bytes already).
        public func uploadSymbols(
            compressedPath: String, buildID: String, name: String,
            progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void = { _, _ in }
        ) async -> UploadOutcome {
            var components = URLComponents()
            components.path = "/api/v1/symbols/\(buildID)"
            components.queryItems = [URLQueryItem(name: "name", value: name)]
            // URLComponents leaves `+` as it is in a query; a server reads it as a space.
            let path = (components.string ?? components.path).replacingOccurrences(of: "+", with: "%2B")
            return await send(
                file: compressedPath, to: path, method: .PUT,
                headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")],
                progress: progress)
        }
    }
#endif
