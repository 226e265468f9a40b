import Foundation

/// Recovery options and the attempter that carries one out (Cocoa's recovery attempter, as a value).
///
/// ```swift
/// let recovery = Recovery(options: ["Retry", "Use cached data"]) { index in
///     index == 0 ? await upload() : useCache()
/// }
/// ```
public struct Recovery: Sendable {
    /// Developer-language titles; localized at display time (the domain's table, key = the title).
    public var options: [String]
    public var attempter: Attempter

    public enum Attempter: Sendable {
        case sync(@Sendable (_ optionIndex: Int) -> Bool)
        case async(@Sendable (_ optionIndex: Int) async -> Bool)

        func run(_ index: Int) async -> Bool {
            switch self {
            case .sync(let body): body(index)
            case .async(let body): await body(index)
            }
        }

        func runBlocking(_ index: Int) -> Bool {
            switch self {
            case .sync(let body):
                return body(index)
            case .async(let body):
                let done = DispatchSemaphore(value: 0)
                let result = ResultBox()
                Task.detached {
                    result.set(await body(index))
                    done.signal()
                }
                done.wait()
                return result.get()
            }
        }
    }

    public init(options: [String], attempter: @escaping @Sendable (_ optionIndex: Int) -> Bool) {
        self.options = options
        self.attempter = .sync(attempter)
    }

    public init(options: [String], attempter: @escaping @Sendable (_ optionIndex: Int) async -> Bool) {
        self.options = options
        self.attempter = .async(attempter)
    }
}

private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set(_ newValue: Bool) { lock.withLock { value = newValue } }
    func get() -> Bool { lock.withLock { value } }
}
