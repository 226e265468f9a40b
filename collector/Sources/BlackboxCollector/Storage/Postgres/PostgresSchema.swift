/// The PostgreSQL schema, as versioned migrations (never edit a shipped one; add the next). Each
/// entry is a list of statements, applied in one transaction under an advisory lock, so several
/// collectors starting at once migrate once.
///
/// `log_lines` is partitioned by the day its bundle was received: retention drops whole days
/// (`DROP TABLE` gives the space back at once) instead of deleting row by row.
enum PostgresSchema {
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE projects (
                id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at DOUBLE PRECISION NOT NULL)
            """,
            """
            CREATE TABLE api_keys (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                kind TEXT NOT NULL CHECK (kind IN ('ingest', 'admin')),
                secret_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL, revoked_at DOUBLE PRECISION)
            """,
            """
            CREATE TABLE bundles (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                upload_id TEXT, sha256 TEXT NOT NULL, size BIGINT NOT NULL, blob TEXT NOT NULL,
                app_name TEXT, app_version TEXT, host TEXT, has_manifest BOOLEAN NOT NULL,
                received_at DOUBLE PRECISION NOT NULL, file_count BIGINT NOT NULL, report_count BIGINT NOT NULL,
                UNIQUE (project_id, upload_id), UNIQUE (project_id, sha256))
            """,
            "CREATE INDEX bundles_received ON bundles (project_id, received_at)",
            """
            CREATE TABLE bundle_files (
                id BIGSERIAL PRIMARY KEY, bundle_id BIGINT NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
                path TEXT NOT NULL, kind TEXT NOT NULL, size BIGINT NOT NULL, sha256 TEXT NOT NULL,
                indexed BOOLEAN NOT NULL DEFAULT false, received_day DATE NOT NULL,
                claimed_until DOUBLE PRECISION)
            """,
            "CREATE INDEX bundle_files_bundle ON bundle_files (bundle_id)",
            "CREATE INDEX bundle_files_unindexed ON bundle_files (id) WHERE NOT indexed AND kind = 'log'",
            """
            CREATE TABLE crash_groups (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                signature TEXT NOT NULL, signature_version BIGINT NOT NULL, signature_text TEXT NOT NULL,
                kind TEXT NOT NULL, title TEXT NOT NULL, count BIGINT NOT NULL,
                first_seen DOUBLE PRECISION NOT NULL, last_seen DOUBLE PRECISION NOT NULL, latest_report_id BIGINT,
                UNIQUE (project_id, signature))
            """,
            "CREATE INDEX crash_groups_last_seen ON crash_groups (project_id, last_seen)",
            """
            CREATE TABLE group_versions (
                group_id BIGINT NOT NULL REFERENCES crash_groups(id), app_version TEXT NOT NULL,
                count BIGINT NOT NULL, PRIMARY KEY (group_id, app_version))
            """,
            """
            CREATE TABLE group_hosts (
                group_id BIGINT NOT NULL REFERENCES crash_groups(id), host TEXT NOT NULL,
                count BIGINT NOT NULL, PRIMARY KEY (group_id, host))
            """,
            """
            CREATE TABLE reports (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                bundle_id BIGINT NOT NULL REFERENCES bundles(id) ON DELETE CASCADE,
                group_id BIGINT NOT NULL REFERENCES crash_groups(id),
                report_uuid TEXT NOT NULL, kind TEXT NOT NULL, occurred_at DOUBLE PRECISION NOT NULL,
                app_version TEXT, host TEXT, reason TEXT, json BYTEA NOT NULL,
                UNIQUE (project_id, report_uuid))
            """,
            "CREATE INDEX reports_group ON reports (group_id, occurred_at)",
            """
            CREATE TABLE log_lines (
                received_day DATE NOT NULL, file_id BIGINT NOT NULL, line_number INTEGER NOT NULL,
                text TEXT NOT NULL, tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
                PRIMARY KEY (received_day, file_id, line_number)
            ) PARTITION BY RANGE (received_day)
            """,
            "CREATE INDEX log_lines_search ON log_lines USING GIN (tsv)",
        ],
        // 2: web sessions and one-time sign-in links: random tokens of their own (only their hashes
        // kept), never the admin token.
        [
            """
            CREATE TABLE sessions (
                token_hash TEXT PRIMARY KEY, key_id BIGINT NOT NULL REFERENCES api_keys(id),
                kind TEXT NOT NULL CHECK (kind IN ('session', 'link')),
                created_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX sessions_expiry ON sessions (expires_at)",
        ],
        // 3: symbols keys, and the symbol store's index.
        [
            "ALTER TABLE api_keys DROP CONSTRAINT api_keys_kind_check",
            "ALTER TABLE api_keys ADD CONSTRAINT api_keys_kind_check CHECK (kind IN ('ingest', 'admin', 'symbols'))",
            """
            CREATE TABLE symbol_files (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                build_id TEXT NOT NULL, file_name TEXT NOT NULL, size BIGINT NOT NULL,
                sha256 TEXT NOT NULL, blob TEXT NOT NULL, has_debug_info BOOLEAN NOT NULL,
                has_code BOOLEAN NOT NULL, uploaded_at DOUBLE PRECISION NOT NULL,
                UNIQUE (project_id, build_id, sha256))
            """,
            "CREATE INDEX symbol_files_uploaded ON symbol_files (project_id, uploaded_at)",
        ],
        // 4: symbolication on the collector: a report's state and the images its frames use; where a
        // regrouped group's occurrences went.
        [
            """
            ALTER TABLE reports ADD COLUMN symbolication TEXT
                CHECK (symbolication IN ('pending', 'missing', 'done'))
            """,
            "ALTER TABLE reports ADD COLUMN symbolication_epoch BIGINT NOT NULL DEFAULT 0",
            "CREATE INDEX reports_pending ON reports (id) WHERE symbolication = 'pending'",
            """
            CREATE TABLE report_images (
                report_id BIGINT NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
                project_id BIGINT NOT NULL, build_id TEXT NOT NULL, resolved BOOLEAN NOT NULL,
                PRIMARY KEY (report_id, build_id))
            """,
            "CREATE INDEX report_images_build ON report_images (project_id, build_id)",
            """
            CREATE TABLE group_moves (
                from_group_id BIGINT NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                to_group_id BIGINT NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                count BIGINT NOT NULL, last_moved_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (from_group_id, to_group_id))
            """,
        ],
        // 5: triage: a group's state and its history; when each app version was first seen.
        [
            """
            ALTER TABLE crash_groups ADD COLUMN state TEXT NOT NULL DEFAULT 'open'
                CHECK (state IN ('open', 'resolved', 'ignored', 'regressed'))
            """,
            "ALTER TABLE crash_groups ADD COLUMN resolved_in TEXT",
            "ALTER TABLE crash_groups ADD COLUMN resolved_after TEXT",
            "ALTER TABLE crash_groups ADD COLUMN ignored_until_count BIGINT",
            "ALTER TABLE crash_groups ADD COLUMN ignored_until DOUBLE PRECISION",
            "ALTER TABLE crash_groups ADD COLUMN state_changed_at DOUBLE PRECISION",
            """
            CREATE TABLE group_history (
                id BIGSERIAL PRIMARY KEY,
                group_id BIGINT NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                at DOUBLE PRECISION NOT NULL, actor TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL,
                detail TEXT)
            """,
            "CREATE INDEX group_history_group ON group_history (group_id, id)",
            """
            CREATE TABLE app_versions (
                project_id BIGINT NOT NULL REFERENCES projects(id), version TEXT NOT NULL,
                first_seen DOUBLE PRECISION NOT NULL, PRIMARY KEY (project_id, version))
            """,
            """
            INSERT INTO app_versions (project_id, version, first_seen)
                SELECT reports.project_id, reports.app_version, min(bundles.received_at)
                FROM reports JOIN bundles ON bundles.id = reports.bundle_id
                WHERE reports.app_version IS NOT NULL GROUP BY reports.project_id, reports.app_version
            """,
        ],
        // 6: alerts: webhooks per project and the durable queue of their deliveries.
        [
            """
            CREATE TABLE webhooks (
                id BIGSERIAL PRIMARY KEY, project_id BIGINT NOT NULL REFERENCES projects(id),
                url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT, format TEXT NOT NULL,
                threshold_count BIGINT, threshold_minutes BIGINT, created_at DOUBLE PRECISION NOT NULL)
            """,
            "CREATE INDEX webhooks_project ON webhooks (project_id)",
            """
            CREATE TABLE alert_deliveries (
                id BIGSERIAL PRIMARY KEY, webhook_id BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
                group_id BIGINT NOT NULL REFERENCES crash_groups(id) ON DELETE CASCADE,
                event TEXT NOT NULL, dedupe_key TEXT NOT NULL, occurrences BIGINT,
                state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
                attempts BIGINT NOT NULL DEFAULT 0, created_at DOUBLE PRECISION NOT NULL,
                next_attempt_at DOUBLE PRECISION, claimed_until DOUBLE PRECISION, delivered_at DOUBLE PRECISION,
                last_status BIGINT, last_error TEXT, UNIQUE (webhook_id, dedupe_key))
            """,
            "CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending'",
            "CREATE INDEX alert_deliveries_webhook ON alert_deliveries (webhook_id, id)",
        ],
        // 7: release health: how the apps' runs ended, per version and day.
        [
            """
            CREATE TABLE release_sessions (
                project_id BIGINT NOT NULL REFERENCES projects(id), app_version TEXT NOT NULL,
                day BIGINT NOT NULL, clean BIGINT NOT NULL, crashed BIGINT NOT NULL, hung BIGINT NOT NULL,
                killed BIGINT NOT NULL, PRIMARY KEY (project_id, app_version, day))
            """
        ],
        // 8: symbolication as a bounded shared resource: attempts per report (then `failed`, kept as
        // `missing` with its reason, as in SQLite) and failures per debug file.
        [
            "ALTER TABLE reports ADD COLUMN symbolication_attempts BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE reports ADD COLUMN symbolication_retry_at DOUBLE PRECISION NOT NULL DEFAULT 0",
            "ALTER TABLE reports ADD COLUMN symbolication_failure TEXT",
            "ALTER TABLE symbol_files ADD COLUMN symbolizer_failures BIGINT NOT NULL DEFAULT 0",
        ],
        // 9: the trace a report belongs to (its scope's trace id).
        [
            "ALTER TABLE reports ADD COLUMN trace_id TEXT",
            "CREATE INDEX reports_trace ON reports (project_id, trace_id) WHERE trace_id IS NOT NULL",
        ],
        // 10: a symbol file's sha1, the checksum sentry-cli names files by.
        [
            "ALTER TABLE symbol_files ADD COLUMN sha1 TEXT",
            "CREATE INDEX symbol_files_sha1 ON symbol_files (project_id, sha1) WHERE sha1 IS NOT NULL",
        ],
        // 11: what senders dropped before it reached the collector, per version, day, category and reason.
        [
            """
            CREATE TABLE release_losses (
                project_id BIGINT NOT NULL REFERENCES projects(id), app_version TEXT NOT NULL, day BIGINT NOT NULL,
                category TEXT NOT NULL, reason TEXT NOT NULL, quantity BIGINT NOT NULL,
                PRIMARY KEY (project_id, app_version, day, category, reason))
            """
        ],
        // 12: what each report's crash most likely was (`CrashDiagnosis.Kind`), for the groups filter.
        ["ALTER TABLE reports ADD COLUMN diagnosis TEXT"],
        // 13: request health: the requests a version's runs served, how many failed and how many a crash cut short.
        [
            "ALTER TABLE release_sessions ADD COLUMN requests BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE release_sessions ADD COLUMN request_errors BIGINT NOT NULL DEFAULT 0",
            "ALTER TABLE release_sessions ADD COLUMN crashed_requests BIGINT NOT NULL DEFAULT 0",
        ],
        // 14: release-regression alerts: a webhook's factor and minimum, and deliveries about a release.
        [
            "ALTER TABLE webhooks ADD COLUMN regression_factor DOUBLE PRECISION",
            "ALTER TABLE webhooks ADD COLUMN regression_minimum_requests BIGINT",
            "ALTER TABLE alert_deliveries ALTER COLUMN group_id DROP NOT NULL",
            "ALTER TABLE alert_deliveries ADD COLUMN app_version TEXT",
            "ALTER TABLE alert_deliveries ADD COLUMN previous_version TEXT",
        ],
        // 15: source bundles, stored as symbol files of their build-id (`SourceBundle`).
        ["ALTER TABLE symbol_files ADD COLUMN has_sources BOOLEAN NOT NULL DEFAULT false"],
    ]
}
