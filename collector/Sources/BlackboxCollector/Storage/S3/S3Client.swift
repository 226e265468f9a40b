import AsyncHTTPClient
import BlackboxSystem
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// The S3 operations a blob store needs, on AsyncHTTPClient with Signature V4: objects put from a
/// file (one request, or a multipart upload above `partBytes`), read into a file, asked about,
/// deleted and listed by prefix, and the bucket checked at start. Every request signs its payload's
/// SHA-256, every answer read into memory is capped (`maxAnswerBytes`), and every failure is an
/// `S3Error` carrying S3's own code.
struct S3Client: Sendable {
    let configuration: S3Configuration
    let http: HTTPClient
    /// Objects larger than this are uploaded in parts of this size (S3: at least 5 MiB but the last).
    var partBytes: Int64 = 16 << 20
    /// Per request; a part of `partBytes` must fit in it on a slow link.
    var timeout: TimeAmount = .seconds(120)
    static let checkTimeout = TimeAmount.seconds(15)
    /// An XML answer (a page of 1,000 keys is ~250 KB).
    static let maxAnswerBytes = 4 << 20

    var signer: S3Signer { S3Signer(credentials: configuration.credentials, region: configuration.region) }

    /// The collector's client for its bucket. A refused connection fails the request at once (the
    /// default retries until the deadline, which held an upload two minutes while the store was
    /// down): the upload is answered 503 and resent by its client. Never shut down: it lives as
    /// long as the process.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    struct ObjectHead: Sendable, Equatable {
        var size: Int64
        var etag: String?
    }

    struct ListPage: Sendable, Equatable {
        /// Keys relative to the configuration's prefix, with their sizes.
        var objects: [(key: String, size: Int64)]
        /// Pass to the next `list` call; nil on the last page.
        var continuation: String?

        static func == (lhs: ListPage, rhs: ListPage) -> Bool {
            lhs.continuation == rhs.continuation && lhs.objects.elementsEqual(rhs.objects) { $0 == $1 }
        }
    }

    // MARK: operations

    /// Refuses to start on a bucket that does not exist or these credentials cannot use: Blackbox
    /// never creates one.
    func checkBucket() async throws {
        // AsyncHTTPClient retries a refused connection until the deadline: a start-up check waits less.
        let answer = try await send(
            "HEAD", key: nil, operation: "HEAD bucket \(configuration.bucket)",
            timeout: min(timeout, Self.checkTimeout))
        guard answer.status == 200 else {
            var error = await failure(answer, operation: "HEAD bucket \(configuration.bucket)")
            // A HEAD answer has no body to say why.
            if answer.status == 404 {
                error.code = "NoSuchBucket"
                error.message =
                    "the bucket \(configuration.bucket) does not exist at \(configuration.hostHeader) "
                    + "(Blackbox never creates one: create it, then start again)"
            } else if answer.status == 403 {
                error.message =
                    "access to the bucket \(configuration.bucket) is denied: check AWS_ACCESS_KEY_ID, "
                    + "AWS_SECRET_ACCESS_KEY and the key's permissions"
            }
            throw error
        }
    }

    /// Stores `size` bytes of the file at `path` under `key`; `sha256`, when known, spares reading the
    /// file twice for a single request. Confirmed in the bucket when this returns.
    func put(key: String, fromFile path: String, size: Int64, sha256: String? = nil) async throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageError.io(path: path, SystemCallError("open")) }
        defer { close(descriptor) }
        // A request whose body ends early is not always refused: SeaweedFS 4.48 stored an empty object
        // when the connection closed before the announced length. A file shorter than the size is
        // never sent.
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StorageError.io(path: path, SystemCallError("fstat")) }
        guard Int64(status.st_size) >= size else {
            throw StorageError.io(path: path, SystemCallError("fstat", errno: EIO))
        }
        if size <= partBytes {
            let body = FileChunks(descriptor: descriptor, path: path, offset: 0, count: size)
            let hash: String
            if let sha256 { hash = sha256 } else { hash = try await body.sha256() }
            let answer = try await send("PUT", key: key, body: body, size: size, sha256: hash, operation: "PUT \(key)")
            guard answer.status == 200 else { throw await failure(answer, operation: "PUT \(key)") }
            return
        }
        try await putInParts(key: key, descriptor: descriptor, path: path, size: size)
    }

    /// Writes the object into a new file at `path` (created, never overwritten) and returns its size;
    /// an object larger than `maxBytes` is refused before its bytes are read.
    func get(key: String, toFile path: String, maxBytes: Int64) async throws -> Int64 {
        let operation = "GET \(key)"
        let answer = try await send("GET", key: key, operation: operation, keepBody: true)
        guard answer.status == 200 else { throw await failure(answer, operation: operation) }
        if let length = answer.headers.first(name: "content-length").flatMap(Int64.init), length > maxBytes {
            throw S3Error(operation: operation, status: 200, code: nil, message: "\(length) bytes, over \(maxBytes)")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StorageError.io(path: path, SystemCallError("open")) }
        var written: Int64 = 0
        do {
            defer { close(descriptor) }
            guard let body = answer.body else { return 0 }
            for try await chunk in body {
                written += Int64(chunk.readableBytes)
                guard written <= maxBytes else {
                    throw S3Error(operation: operation, status: 200, code: nil, message: "more than \(maxBytes) bytes")
                }
                try chunk.withUnsafeReadableBytes { bytes in
                    guard writeFully(descriptor, bytes.baseAddress, bytes.count) else {
                        throw StorageError.io(path: path, SystemCallError("write"))
                    }
                }
            }
        } catch {
            unlink(path)
            throw error
        }
        return written
    }

    /// The object's size, or nil when there is no such key.
    func head(key: String) async throws -> ObjectHead? {
        let answer = try await send("HEAD", key: key, operation: "HEAD \(key)")
        if answer.status == 404 { return nil }
        guard answer.status == 200 else { throw await failure(answer, operation: "HEAD \(key)") }
        return ObjectHead(
            size: answer.headers.first(name: "content-length").flatMap(Int64.init) ?? 0,
            etag: answer.headers.first(name: "etag"))
    }

    /// Deletes the key; a key that is already gone is not an error (S3 answers 204 either way).
    func delete(key: String) async throws {
        let answer = try await send("DELETE", key: key, operation: "DELETE \(key)")
        guard answer.status == 204 || answer.status == 200 || answer.status == 404 else {
            throw await failure(answer, operation: "DELETE \(key)")
        }
    }

    /// One page of the keys under `prefix` (relative to the configuration's prefix), in key order.
    func list(prefix: String, continuation: String? = nil, maxKeys: Int = 1_000) async throws -> ListPage {
        var query: [(name: String, value: String)] = [
            ("list-type", "2"), ("prefix", configuration.prefix + prefix), ("max-keys", String(maxKeys)),
            ("encoding-type", "url"),
        ]
        if let continuation { query.append(("continuation-token", continuation)) }
        let operation = "LIST \(prefix)"
        let answer = try await send("GET", key: nil, query: query, operation: operation, keepBody: true)
        guard answer.status == 200 else { throw await failure(answer, operation: operation) }
        let xml = try await document(answer, operation: operation)
        var objects: [(key: String, size: Int64)] = []
        for entry in xml.children("Contents") {
            // `encoding-type=url` encodes a space as `+` (and a `+` as `%2B`).
            guard let encoded = entry.text("Key"),
                let key = encoded.replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                key.hasPrefix(configuration.prefix)
            else {
                throw S3Error(operation: operation, status: 200, code: nil, message: "a key outside \(prefix)")
            }
            objects.append((String(key.dropFirst(configuration.prefix.count)), Int64(entry.text("Size") ?? "") ?? 0))
        }
        let truncated = xml.text("IsTruncated") == "true"
        return ListPage(objects: objects, continuation: truncated ? xml.text("NextContinuationToken") : nil)
    }

    /// Copies an object within the bucket, on the store's side (nothing is downloaded).
    func copy(from source: String, to key: String) async throws {
        let operation = "COPY \(source) to \(key)"
        let sourcePath = S3Signer.encodedPath("/\(configuration.bucket)/\(configuration.prefix)\(source)")
        let answer = try await send(
            "PUT", key: key, headers: ["x-amz-copy-source": sourcePath], operation: operation, keepBody: true)
        guard answer.status == 200 else { throw await failure(answer, operation: operation) }
        // S3 may answer 200 and report the failure in the body.
        let result = try await document(answer, operation: operation)
        if result.name == "Error" {
            throw S3Error(
                operation: operation, status: 200, code: result.text("Code"), message: result.text("Message") ?? "")
        }
    }

    /// Every key under `prefix`, page after page.
    func listAll(prefix: String) async throws -> [(key: String, size: Int64)] {
        var objects: [(key: String, size: Int64)] = []
        var continuation: String?
        repeat {
            let page = try await list(prefix: prefix, continuation: continuation)
            objects += page.objects
            continuation = page.continuation
        } while continuation != nil
        return objects
    }

    // MARK: multipart

    /// CreateMultipartUpload, one UploadPart per `partBytes`, CompleteMultipartUpload; aborted on any
    /// failure so that no parts are left to be billed.
    private func putInParts(key: String, descriptor: Int32, path: String, size: Int64) async throws {
        let operation = "PUT \(key) (multipart)"
        let created = try await send("POST", key: key, query: [("uploads", "")], operation: operation, keepBody: true)
        guard created.status == 200 else { throw await failure(created, operation: operation) }
        guard let uploadID = try await document(created, operation: operation).text("UploadId"), !uploadID.isEmpty
        else {
            throw S3Error(operation: operation, status: 200, code: nil, message: "no UploadId in the answer")
        }
        do {
            var etags: [String] = []
            var offset: Int64 = 0
            while offset < size {
                let count = min(partBytes, size - offset)
                let part = FileChunks(descriptor: descriptor, path: path, offset: offset, count: count)
                let number = etags.count + 1
                let answer = try await send(
                    "PUT", key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)], body: part,
                    size: count, sha256: try await part.sha256(), operation: "\(operation) part \(number)")
                guard answer.status == 200, let etag = answer.headers.first(name: "etag") else {
                    throw await failure(answer, operation: "\(operation) part \(number)")
                }
                etags.append(etag)
                offset += count
            }
            let parts = etags.enumerated().map { index, etag in
                "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(XMLText.escaped(etag))</ETag></Part>"
            }
            let completion = Data(("<CompleteMultipartUpload>" + parts.joined() + "</CompleteMultipartUpload>").utf8)
            let answer = try await send(
                "POST", key: key, query: [("uploadId", uploadID)], data: completion, operation: operation,
                keepBody: true)
            guard answer.status == 200 else { throw await failure(answer, operation: operation) }
            // S3 may answer 200 and report the failure in the body.
            let result = try await document(answer, operation: operation)
            if result.name == "Error" {
                throw S3Error(
                    operation: operation, status: 200, code: result.text("Code"), message: result.text("Message") ?? "")
            }
        } catch {
            _ = try? await send("DELETE", key: key, query: [("uploadId", uploadID)], operation: "\(operation) abort")
            throw error
        }
    }

    // MARK: requests

    private struct Answer {
        var status: Int
        var headers: HTTPHeaders
        /// Only when the caller asked to read it; otherwise drained.
        var body: HTTPClientResponse.Body?
    }

    /// A request with a body from memory (small XML documents).
    private func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], data: Data,
        operation: String, keepBody: Bool = false
    ) async throws -> Answer {
        try await send(
            method, key: key, query: query, body: .bytes(ByteBuffer(bytes: data)),
            sha256: SHA256.hash(data: data).lowercaseHex, operation: operation, keepBody: keepBody)
    }

    /// A request with a body read from a file.
    private func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], body: FileChunks, size: Int64,
        sha256: String, operation: String
    ) async throws -> Answer {
        try await send(
            method, key: key, query: query, body: .stream(body, length: .known(size)), sha256: sha256,
            operation: operation)
    }

    private func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], headers: [String: String] = [:],
        body: HTTPClientRequest.Body? = nil, sha256: String = S3Signer.emptyPayloadHash,
        operation: String, keepBody: Bool = false, timeout: TimeAmount? = nil
    ) async throws -> Answer {
        let path = configuration.encodedPath(key: key)
        var request = HTTPClientRequest(url: configuration.url(encodedPath: path, query: query))
        request.method = HTTPMethod(rawValue: method)
        let headers = signer.sign(
            method: method, encodedPath: path, query: query,
            headers: headers.merging(["host": configuration.hostHeader]) { $1 }, payloadSHA256: sha256, at: Date())
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        // The body's length is known: AsyncHTTPClient sends it as `Content-Length`.
        if let body { request.body = body }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, timeout: timeout ?? self.timeout)
        } catch let error as StorageError {
            throw error  // the body's file could not be read
        } catch {
            throw S3Error(operation: operation, status: nil, code: nil, message: "\(error)")
        }
        let status = Int(response.status.code)
        // A failure's body is S3's XML error; a success's is read only when the caller wants it.
        if keepBody || status >= 300 { return Answer(status: status, headers: response.headers, body: response.body) }
        for try await _ in response.body {}
        return Answer(status: status, headers: response.headers, body: nil)
    }

    private func document(_ answer: Answer, operation: String) async throws -> S3XML {
        let bytes = try await collect(answer, operation: operation)
        do {
            return try S3XML.parse(Data(buffer: bytes))
        } catch {
            throw S3Error(operation: operation, status: answer.status, code: nil, message: "\(error)")
        }
    }

    private func collect(_ answer: Answer, operation: String) async throws -> ByteBuffer {
        guard let body = answer.body else { return ByteBuffer() }
        do {
            return try await body.collect(upTo: Self.maxAnswerBytes)
        } catch {
            throw S3Error(
                operation: operation, status: answer.status, code: nil,
                message: "the answer could not be read: \(error)")
        }
    }

    /// The error an unsuccessful answer stands for, with S3's code and message from its XML.
    private func failure(_ answer: Answer, operation: String) async -> S3Error {
        let bytes = (try? await collect(answer, operation: operation)) ?? ByteBuffer()
        let xml = try? S3XML.parse(Data(buffer: bytes))
        let message =
            xml?.text("Message")
            ?? (bytes.readableBytes == 0
                ? "(no details)" : String(decoding: bytes.readableBytesView.prefix(200), as: UTF8.self))
        return S3Error(operation: operation, status: answer.status, code: xml?.text("Code"), message: message)
    }
}
