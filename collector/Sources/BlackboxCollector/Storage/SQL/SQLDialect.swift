/// What really differs between the two databases' SQL, in one place (sql-kit's `SQLDialect`
/// habit). Everything else in a statement is written once. An enumeration rather than a protocol:
/// there are exactly two stores, and a switch shows both answers side by side.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The placeholder for the `index`-th bound value (from 1).
    func placeholder(_ index: Int) -> String {
        switch self {
        case .sqlite: "?"
        case .postgres: "$\(index)"
        }
    }

    /// Each statement is a round trip to a server (PostgreSQL), so a transaction sends fewer, larger
    /// ones: PostgreSQL + a bucket took 1.21x the uploads that way. SQLite runs in the process, where
    /// the same change lengthened the tail instead (open loop p99 11.9 vs 10.6 ms, Sentry events 56.0
    /// vs 50.0 ms; 3 runs each, ranges overlapping, 2026-12-05), so it keeps a lookup before an insert
    /// and a statement per row.
    var statementsAreRoundTrips: Bool { self == .postgres }

    /// A dialect-specific piece of a statement.
    enum Token: Sendable {
        /// The smaller / larger of its arguments (SQLite's scalar `min` / `max`).
        case least
        case greatest
        /// Locks the selected rows until the transaction ends; SQLite's writer lock already
        /// serialises every write transaction.
        case forUpdate
        /// Rounds its argument down. Only used on values that are never negative, where SQLite's
        /// `CAST(… AS BIGINT)`, which truncates, already rounds down; PostgreSQL's rounds to nearest.
        case floor
        /// Locks the selected rows, skipping those another transaction holds (claims by several
        /// instances).
        case forUpdateSkipLocked
        /// Follows a bound value to give it a type PostgreSQL cannot infer: a day (`YYYY-MM-DD`)
        /// for a DATE column, a possibly-NULL integer compared with `IS NULL`. SQLite's values
        /// carry their type.
        case cast(ValueType)
    }

    enum ValueType: String, Sendable {
        case date
        case bigint
        case text
    }

    func sql(_ token: Token) -> String {
        switch (self, token) {
        case (.sqlite, .least): "min"
        case (.sqlite, .greatest): "max"
        case (.sqlite, .forUpdate), (.sqlite, .forUpdateSkipLocked), (.sqlite, .cast), (.sqlite, .floor): ""
        case (.postgres, .least): "LEAST"
        case (.postgres, .greatest): "GREATEST"
        case (.postgres, .floor): "floor"
        case (.postgres, .forUpdate): " FOR UPDATE"
        case (.postgres, .forUpdateSkipLocked): " FOR UPDATE SKIP LOCKED"
        case (.postgres, .cast(let type)): "::\(type.rawValue)"
        }
    }
}
