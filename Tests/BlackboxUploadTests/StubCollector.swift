#if Upload
    import NIOCore
    import NIOHTTP1
    import NIOPosix
    import Synchronization

    /// A scripted HTTP server on an ephemeral loopback port: answers uploads with the statuses it is
    /// given, in order (201 once they run out), and records what it received. The real collector is
    /// exercised by the collector package's end-to-end tests; this one lets the uploader's retry
    /// contract be tested status by status.
    final class StubCollector: Sendable {
        struct Received: Sendable {
            var method: String
            var path: String
            var uploadID: String?
            var authorization: String?
            var bodyBytes: Int
            var headers: [String: String] = [:]
            /// The first MiB of the body.
            var body: [UInt8] = []
        }

        struct Answer: Sendable {
            var status: Int
            var body: String
            var headers: [String: String] = [:]
        }

        let port: Int
        private let channel: any Channel
        private let state: State

        final class State: Sendable {
            let script: Mutex<[Answer]>
            let received = Mutex<[Received]>([])
            init(script: [Answer]) { self.script = Mutex(script) }

            func nextAnswer() -> Answer {
                script.withLock { $0.isEmpty ? Answer(status: 201, body: "{\"bundleID\":1}") : $0.removeFirst() }
            }
        }

        var received: [Received] { state.received.withLock { $0 } }
        var baseURL: String { "http://127.0.0.1:\(port)" }

        static func start(answers: [(status: Int, body: String)] = []) async throws -> StubCollector {
            try await start(script: answers.map { Answer(status: $0.status, body: $0.body) })
        }

        static func start(script: [Answer]) async throws -> StubCollector {
            let state = State(script: script)
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.pipeline.configureHTTPServerPipeline().flatMap {
                        channel.pipeline.addHandler(Handler(state: state))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            return StubCollector(channel: channel, state: state)
        }

        private init(channel: any Channel, state: State) {
            self.channel = channel
            self.state = state
            self.port = channel.localAddress?.port ?? 0
        }

        func stop() async {
            try? await channel.close()
        }

        final class Handler: ChannelInboundHandler, @unchecked Sendable {
            typealias InboundIn = HTTPServerRequestPart
            typealias OutboundOut = HTTPServerResponsePart
            let state: State
            var current: Received?

            init(state: State) { self.state = state }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                switch unwrapInboundIn(data) {
                case .head(let head):
                    current = Received(
                        method: "\(head.method)", path: head.uri, uploadID: head.headers.first(name: "Upload-Id"),
                        authorization: head.headers.first(name: "Authorization"), bodyBytes: 0,
                        headers: Dictionary(
                            head.headers.map { ($0.name.lowercased(), $0.value) },
                            uniquingKeysWith: { first, _ in first }))
                case .body(let buffer):
                    current?.bodyBytes += buffer.readableBytes
                    if let count = current?.body.count, count < 1 << 20 {
                        current?.body += Array(buffer: buffer).prefix((1 << 20) - count)
                    }
                case .end:
                    guard let request = current else { return }
                    state.received.withLock { $0.append(request) }
                    let answer = state.nextAnswer()
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Type", value: "application/json")
                    headers.add(name: "Content-Length", value: "\(answer.body.utf8.count)")
                    for (name, value) in answer.headers { headers.add(name: name, value: value) }
                    let head = HTTPResponseHead(
                        version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
                    context.write(wrapOutboundOut(.head(head)), promise: nil)
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: answer.body)))), promise: nil)
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    current = nil
                }
            }
        }
    }
#endif
