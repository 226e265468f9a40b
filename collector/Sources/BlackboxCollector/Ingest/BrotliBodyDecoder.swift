import CBlackboxBrotli

/// Brotli's streaming decoder (`Content-Encoding: br`). Hand-written over the C library because no
/// Swift package decodes brotli; the decoder keeps no more than its window (at most 16 MiB, usually
/// 4 MiB) however the input is shaped, and the output is bounded by the caller (`BodyReceiver`).
final class BrotliBodyDecoder: BodyDecoder {
    private let state: OpaquePointer
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    private(set) var isComplete = false

    init() throws {
        guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else {
            throw BodyDecodingFailure(description: "brotli cannot start")
        }
        self.state = state
    }

    deinit { BrotliDecoderDestroyInstance(state) }

    func decode(_ input: UnsafeRawBufferPointer, output: (ArraySlice<UInt8>) throws -> Void) throws {
        guard let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self), !input.isEmpty else { return }
        if isComplete { throw BodyDecodingFailure(description: "bytes after the end of the brotli stream") }
        var availableIn = input.count
        var nextIn: UnsafePointer<UInt8>? = base
        while true {
            var availableOut = chunk.count
            let result = chunk.withUnsafeMutableBufferPointer { out -> BrotliDecoderResult in
                var nextOut: UnsafeMutablePointer<UInt8>? = out.baseAddress
                return BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            }
            let produced = chunk.count - availableOut
            if produced > 0 { try output(chunk[0..<produced]) }
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                isComplete = true
                if availableIn > 0 {
                    throw BodyDecodingFailure(description: "bytes after the end of the brotli stream")
                }
                return
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                return
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                continue
            default:
                let code = BrotliDecoderGetErrorCode(state)
                let name = BrotliDecoderErrorString(code).map { String(cString: $0) } ?? "\(code)"
                throw BodyDecodingFailure(description: "not valid brotli data (\(name))")
            }
        }
    }
}
