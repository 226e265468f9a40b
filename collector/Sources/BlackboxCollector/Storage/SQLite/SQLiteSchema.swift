import GRDB

/// The SQLite schema, as versioned migrations (never edit a shipped one; add the next).
enum SQLiteSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE projects (
                        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at REAL NOT NULL);
                    CREATE TABLE api_keys (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        kind TEXT NOT NULL CHECK (kind IN ('ingest', 'admin')),
                        secret_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL,
                        created_at REAL NOT NULL, revoked_at REAL);
                    CREATE TABLE bundles (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        upload_id TEXT, sha256 TEXT NOT NULL, size INTEGER NOT NULL, blob TEXT NOT NULL,
                        app_name TEXT, app_version TEXT, host TEXT, has_manifest INTEGER NOT NULL,
                        received_at REAL NOT NULL, file_count INTEGER NOT NULL, report_count INTEGER NOT NULL,
                        UNIQUE (project_id, upload_id), UNIQUE (project_id, sha256));
                    CREATE INDEX bundles_received ON bundles (project_id, received_at);
                    CREATE TABLE bundle_files (
                        id INTEGER PRIMARY KEY, bundle_id INTEGER NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
                        path TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, sha256 TEXT NOT NULL,
                        indexed INTEGER NOT NULL DEFAULT 0);
                    CREATE INDEX bundle_files_bundle ON bundle_files (bundle_id);
                    CREATE INDEX bundle_files_unindexed ON bundle_files (indexed, kind) WHERE indexed = 0;
                    CREATE TABLE crash_groups (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        signature TEXT NOT NULL, signature_version INTEGER NOT NULL, signature_text TEXT NOT NULL,
                        kind TEXT NOT NULL, title TEXT NOT NULL, count INTEGER NOT NULL,
                        first_seen REAL NOT NULL, last_seen REAL NOT NULL, latest_report_id INTEGER,
                        UNIQUE (project_id, signature));
                    CREATE INDEX crash_groups_last_seen ON crash_groups (project_id, last_seen);
                    CREATE TABLE group_versions (
                        group_id INTEGER NOT NULL REFERENCES crash_groups(id), app_version TEXT NOT NULL,
                        count INTEGER NOT NULL, PRIMARY KEY (group_id, app_version));
                    CREATE TABLE group_hosts (
                        group_id INTEGER NOT NULL REFERENCES crash_groups(id), host TEXT NOT NULL,
                        count INTEGER NOT NULL, PRIMARY KEY (group_id, host));
                    CREATE TABLE reports (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        bundle_id INTEGER NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
                        group_id INTEGER NOT NULL REFERENCES crash_groups(id),
                        report_uuid TEXT NOT NULL, kind TEXT NOT NULL, occurred_at REAL NOT NULL,
                        app_version TEXT, host TEXT, reason TEXT, json BLOB NOT NULL,
                        UNIQUE (project_id, report_uuid));
                    CREATE INDEX reports_group ON reports (group_id, occurred_at);
                    CREATE VIRTUAL TABLE log_lines USING fts5(
                        text, file_id UNINDEXED, line_number UNINDEXED, tokenize = 'unicode61');
                    """)
        }
        // Web sessions and one-time sign-in links: random tokens of their own (only their hashes kept),
        // never the admin token.
        migrator.registerMigration("v2-sessions") { db in
            try db.execute(
                sql: """
                    CREATE TABLE sessions (
                        token_hash TEXT PRIMARY KEY, key_id INTEGER NOT NULL REFERENCES api_keys(id),
                        kind TEXT NOT NULL CHECK (kind IN ('session', 'link')),
                        created_at REAL NOT NULL, expires_at REAL NOT NULL);
                    CREATE INDEX sessions_expiry ON sessions (expires_at);
                    """)
        }
        // Symbols keys, and the symbol store's index. SQLite cannot alter a CHECK constraint: the keys
        // table is rebuilt (GRDB defers foreign-key checks to the end of a migration).
        migrator.registerMigration("v3-symbols") { db in
            try db.execute(
                sql: """
                    CREATE TABLE api_keys_v3 (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        kind TEXT NOT NULL CHECK (kind IN ('ingest', 'admin', 'symbols')),
                        secret_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL,
                        created_at REAL NOT NULL, revoked_at REAL);
                    INSERT INTO api_keys_v3 SELECT id, project_id, kind, secret_hash, prefix, created_at, revoked_at
                        FROM api_keys;
                    DROP TABLE api_keys;
                    ALTER TABLE api_keys_v3 RENAME TO api_keys;
                    CREATE TABLE symbol_files (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        build_id TEXT NOT NULL, file_name TEXT NOT NULL, size INTEGER NOT NULL,
                        sha256 TEXT NOT NULL, blob TEXT NOT NULL, has_debug_info INTEGER NOT NULL,
                        has_code INTEGER NOT NULL, uploaded_at REAL NOT NULL,
                        UNIQUE (project_id, build_id, sha256));
                    CREATE INDEX symbol_files_uploaded ON symbol_files (project_id, uploaded_at);
                    """)
        }
        // Symbolication on the collector: a report's state and the images its frames use; where a
        // regrouped group's occurrences went.
        migrator.registerMigration("v4-symbolication") { db in
            try db.execute(
                sql: """
                    ALTER TABLE reports ADD COLUMN symbolication TEXT
                        CHECK (symbolication IN ('pending', 'missing', 'done'));
                    ALTER TABLE reports ADD COLUMN symbolication_epoch INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX reports_pending ON reports (id) WHERE symbolication = 'pending';
                    CREATE TABLE report_images (
                        report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
                        project_id INTEGER NOT NULL, build_id TEXT NOT NULL, resolved INTEGER NOT NULL,
                        PRIMARY KEY (report_id, build_id));
                    CREATE INDEX report_images_build ON report_images (project_id, build_id);
                    CREATE TABLE group_moves (
                        from_group_id INTEGER NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                        to_group_id INTEGER NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                        count INTEGER NOT NULL, last_moved_at REAL NOT NULL,
                        PRIMARY KEY (from_group_id, to_group_id));
                    """)
        }
        // Triage: a group's state and its history; when each app version was first seen (the order of
        // versions that are not semantic versions).
        migrator.registerMigration("v5-triage") { db in
            try db.execute(
                sql: """
                    ALTER TABLE crash_groups ADD COLUMN state TEXT NOT NULL DEFAULT 'open'
                        CHECK (state IN ('open', 'resolved', 'ignored', 'regressed'));
                    ALTER TABLE crash_groups ADD COLUMN resolved_in TEXT;
                    ALTER TABLE crash_groups ADD COLUMN resolved_after TEXT;
                    ALTER TABLE crash_groups ADD COLUMN ignored_until_count INTEGER;
                    ALTER TABLE crash_groups ADD COLUMN ignored_until REAL;
                    ALTER TABLE crash_groups ADD COLUMN state_changed_at REAL;
                    CREATE TABLE group_history (
                        id INTEGER PRIMARY KEY,
                        group_id INTEGER NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                        at REAL NOT NULL, actor TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL,
                        detail TEXT);
                    CREATE INDEX group_history_group ON group_history (group_id, id);
                    CREATE TABLE app_versions (
                        project_id INTEGER NOT NULL REFERENCES projects(id), version TEXT NOT NULL,
                        first_seen REAL NOT NULL, PRIMARY KEY (project_id, version));
                    INSERT INTO app_versions (project_id, version, first_seen)
                        SELECT reports.project_id, reports.app_version, min(bundles.received_at)
                        FROM reports JOIN bundles ON bundles.id = reports.bundle_id
                        WHERE reports.app_version IS NOT NULL GROUP BY reports.project_id, reports.app_version;
                    """)
        }
        // Alerts: webhooks per project and the durable queue of their deliveries.
        migrator.registerMigration("v6-alerts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE webhooks (
                        id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL REFERENCES projects(id),
                        url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT, format TEXT NOT NULL,
                        threshold_count INTEGER, threshold_minutes INTEGER, created_at REAL NOT NULL);
                    CREATE INDEX webhooks_project ON webhooks (project_id);
                    CREATE TABLE alert_deliveries (
                        id INTEGER PRIMARY KEY, webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
                        group_id INTEGER NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                        event TEXT NOT NULL, dedupe_key TEXT NOT NULL, occurrences INTEGER,
                        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
                        attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, next_attempt_at REAL,
                        claimed_until REAL, delivered_at REAL, last_status INTEGER, last_error TEXT,
                        UNIQUE (webhook_id, dedupe_key));
                    CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_deliveries_webhook ON alert_deliveries (webhook_id, id);
                    """)
        }
        // Release health: how the apps' runs ended, per version and day.
        migrator.registerMigration("v7-releases") { db in
            try db.execute(
                sql: """
                    CREATE TABLE release_sessions (
                        project_id INTEGER NOT NULL REFERENCES projects(id), app_version TEXT NOT NULL,
                        day INTEGER NOT NULL, clean INTEGER NOT NULL, crashed INTEGER NOT NULL, hung INTEGER NOT NULL,
                        killed INTEGER NOT NULL, PRIMARY KEY (project_id, app_version, day));
                    """)
        }
        // Symbolication as a bounded shared resource: attempts per report (then `failed`, kept as
        // `missing` with its reason: SQLite cannot alter the state's CHECK) and failures per debug file.
        migrator.registerMigration("v8-symbolication-bounds") { db in
            try db.execute(
                sql: """
                    ALTER TABLE reports ADD COLUMN symbolication_attempts INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE reports ADD COLUMN symbolication_retry_at REAL NOT NULL DEFAULT 0;
                    ALTER TABLE reports ADD COLUMN symbolication_failure TEXT;
                    ALTER TABLE symbol_files ADD COLUMN symbolizer_failures INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        // The day a file arrived, as PostgreSQL keeps it for its partitions: one ingest statement
        // serves both stores (SQLite only stores it).
        migrator.registerMigration("v9-file-day") { db in
            try db.execute(sql: "ALTER TABLE bundle_files ADD COLUMN received_day TEXT")
        }
        // The trace a report belongs to (its scope's trace id), for finding a failing request's
        // reports from the trace.
        migrator.registerMigration("v10-trace-ids") { db in
            try db.execute(
                sql: """
                    ALTER TABLE reports ADD COLUMN trace_id TEXT;
                    CREATE INDEX reports_trace ON reports (project_id, trace_id) WHERE trace_id IS NOT NULL;
                    """)
        }
        migrator.registerMigration("v11-symbol-sha1") { db in
            try db.execute(
                sql: """
                    ALTER TABLE symbol_files ADD COLUMN sha1 TEXT;
                    CREATE INDEX symbol_files_sha1 ON symbol_files (project_id, sha1) WHERE sha1 IS NOT NULL;
                    """)
        }
        // What senders dropped before it reached the collector, per version, day, category and reason.
        migrator.registerMigration("v12-losses") { db in
            try db.execute(
                sql: """
                    CREATE TABLE release_losses (
                        project_id INTEGER NOT NULL REFERENCES projects(id), app_version TEXT NOT NULL,
                        day INTEGER NOT NULL, category TEXT NOT NULL, reason TEXT NOT NULL, quantity INTEGER NOT NULL,
                        PRIMARY KEY (project_id, app_version, day, category, reason));
                    """)
        }
        // What each report's crash most likely was (`CrashDiagnosis.Kind`), for the groups filter.
        // Reports stored before it have none.
        migrator.registerMigration("v13-diagnosis") { db in
            try db.execute(sql: "ALTER TABLE reports ADD COLUMN diagnosis TEXT")
        }
        // Request health: the requests a version's runs served, how many failed and how many a crash cut short.
        migrator.registerMigration("v14-request-health") { db in
            try db.execute(
                sql: """
                    ALTER TABLE release_sessions ADD COLUMN requests INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE release_sessions ADD COLUMN request_errors INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE release_sessions ADD COLUMN crashed_requests INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        // Release-regression alerts: a webhook's factor and minimum, and deliveries about a release
        // rather than a group. SQLite cannot drop NOT NULL from a column: the table is rebuilt (the
        // migrator checks foreign keys at the end of the migration).
        migrator.registerMigration("v15-release-regression-alerts") { db in
            try db.execute(
                sql: """
                    ALTER TABLE webhooks ADD COLUMN regression_factor REAL;
                    ALTER TABLE webhooks ADD COLUMN regression_minimum_requests INTEGER;
                    CREATE TABLE alert_deliveries_v15 (
                        id INTEGER PRIMARY KEY, webhook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
                        group_id INTEGER REFERENCES crash_groups(id) ON DELETE CASCADE,
                        app_version TEXT, previous_version TEXT,
                        event TEXT NOT NULL, dedupe_key TEXT NOT NULL, occurrences INTEGER,
                        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
                        attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, next_attempt_at REAL,
                        claimed_until REAL, delivered_at REAL, last_status INTEGER, last_error TEXT,
                        UNIQUE (webhook_id, dedupe_key));
                    INSERT INTO alert_deliveries_v15 (id, webhook_id, group_id, event, dedupe_key, occurrences, state,
                        attempts, created_at, next_attempt_at, claimed_until, delivered_at, last_status, last_error)
                    SELECT id, webhook_id, group_id, event, dedupe_key, occurrences, state, attempts, created_at,
                        next_attempt_at, claimed_until, delivered_at, last_status, last_error
                    FROM alert_deliveries;
                    DROP TABLE alert_deliveries;
                    ALTER TABLE alert_deliveries_v15 RENAME TO alert_deliveries;
                    CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending';
                    CREATE INDEX alert_deliveries_webhook ON alert_deliveries (webhook_id, id);
                    """)
        }
        // Source bundles, stored as symbol files of their build-id (`SourceBundle`).
        migrator.registerMigration("v16-source-bundles") { db in
            try db.execute(sql: "ALTER TABLE symbol_files ADD COLUMN has_sources INTEGER NOT NULL DEFAULT 0")
        }
        return migrator
    }
}
