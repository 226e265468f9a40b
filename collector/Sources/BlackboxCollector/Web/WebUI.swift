import BlackboxFormat
import BlackboxSymbols
import Foundation
import Hummingbird
import Mustache

/// The server-rendered web UI (swift-mustache templates in Web/Templates). Every value from an upload
/// is HTML-escaped by the templates (`{{…}}`); pages work without JavaScript.
struct WebUI {
    let store: any CollectorStore
    let reader: BundleReader
    /// The symbolizer the collector symbolicates with, or nil (the symbols page says so).
    let symbolizer: String?
    /// Where symbol files are, for deleting them from the symbols page.
    let symbolBlobs: any BlobStorage
    let library: MustacheLibrary
    let sessions: WebSessions
    /// The collector's address as SDKs reach it (`--public-url`); nil: the address the browser used.
    var publicURL: String? = nil

    static func loadTemplates() async throws -> MustacheLibrary {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("Templates").path else {
            throw StorageError.notFound("the web UI templates")
        }
        return try await MustacheLibrary(directory: directory)
    }

    func register(on group: RouterGroup<AuthenticatedContext>) {
        group.get("/") { request, context in
            let page = request.page
            let query: GroupQuery
            do {
                query = try GroupQuery(parameters: request.queryDictionary)
            } catch let error as APIError {
                return message("Crash groups", "\(error.message).", status: .badRequest)
            }
            let groups = try await store.groups(in: context.scope, query: query, page: page)
            let days = Trends.days(14, endingAt: query.now)
            let histogram = try await store.occurrenceHistogram(
                groupIDs: groups.map(\.id), in: context.scope, since: days.since, bucketSeconds: 86_400, buckets: 14)
            var values: [String: Any] = [
                "title": query.version.map { "Top crashers in \($0)" } ?? "Crash groups", "hasGroups": !groups.isEmpty,
                "groups": groups.map { group -> [String: Any] in
                    [
                        "id": group.id, "title": group.title, "kind": group.kind, "count": group.count,
                        "lastSeen": iso(group.lastSeen), "versions": summary(group.versions),
                        "state": group.state.rawValue,
                        "sparkline": SVGChart(
                            bars: Trends.bars(histogram[group.id] ?? [], labels: days.labels), name: "sparkline"
                        ).sparkline(),
                    ]
                },
                "filter": filterValues(query),
            ]
            if groups.count == page.limit {
                values["next"] = "/?\(query.queryString)offset=\(page.offset + page.limit)"
            }
            return render("groups", values)
        }
        group.get("groups/:id") { request, context in
            let id = try context.id()
            guard let group = try await store.group(id: id, in: context.scope) else { return notFound() }
            let occurrences = try await store.occurrences(groupID: id, in: context.scope, page: request.page)
            var values: [String: Any] = [
                "title": group.title, "group": group, "firstSeen": iso(group.firstSeen),
                "lastSeen": iso(group.lastSeen),
                "versions": summary(group.versions), "hosts": summary(group.hosts),
                "signatureText": try await signatureText(of: group, in: context.scope),
                "occurrences": occurrences.map { occurrence -> [String: Any] in
                    [
                        "reportID": occurrence.reportID, "bundleID": occurrence.bundleID,
                        "occurredAt": iso(occurrence.occurredAt), "appVersion": occurrence.appVersion ?? "",
                        "host": occurrence.host ?? "", "reason": occurrence.reason ?? "",
                    ]
                },
            ]
            values["status"] = statusValues(group, request: request)
            values["charts"] = try await charts(for: group, in: context.scope)
            values["history"] = try await store.statusHistory(groupID: id, in: context.scope).reversed().map {
                change -> [String: Any] in
                [
                    "at": iso(change.at), "actor": change.actor, "from": change.from.rawValue,
                    "to": change.to.rawValue, "detail": change.detail ?? "",
                ]
            }
            values["moves"] = try await store.moves(fromGroup: id, in: context.scope).map { move -> [String: Any] in
                ["toGroupID": move.toGroupID, "count": move.count, "plural": move.count != 1]
            }
            if let latestID = group.latestReportID, let latest = try await store.report(id: latestID, in: context.scope)
            {
                // Absent, not empty, when missing: the template would show an empty block for "".
                var latestValues: [String: Any] = ["reportID": latestID, "stack": stackText(latest.report)]
                latestValues["reason"] = latest.report.reason.flatMap { $0.isEmpty ? nil : $0 }
                latestValues["fatalMessage"] = latest.report.fatalMessage.flatMap { $0.isEmpty ? nil : $0 }
                values["latest"] = latestValues
            }
            return render("group", values)
        }
        group.post("groups/:id/state") { request, context in
            let id = try context.id()
            let form = Self.formFields(String(buffer: try await request.body.collect(upTo: 16 << 10)))
            guard WebSessions.isGenuineForm(request, token: form["csrf"]) else {
                return message(
                    "Not changed", "The form expired or came from another site: reload the page and try again.",
                    status: .forbidden)
            }
            let statusRequest: StatusRequest
            do {
                statusRequest = try StatusRequest(form: form)
            } catch let error as APIError {
                return message("Not changed", "\(error.message).", status: .badRequest)
            }
            guard
                try await store.changeStatus(
                    groupID: id, in: context.scope, to: statusRequest, actor: "admin:\(context.key.prefix)", at: Date())
                    != nil
            else { return notFound() }
            return Response(status: .seeOther, headers: [.location: "/groups/\(id)"])
        }
        group.post("symbols/:buildID/delete") { request, context in
            let form = Self.formFields(String(buffer: try await request.body.collect(upTo: 16 << 10)))
            guard WebSessions.isGenuineForm(request, token: form["csrf"]) else {
                return message(
                    "Not deleted", "The form expired or came from another site: reload the page and try again.",
                    status: .forbidden)
            }
            let buildID = context.parameters.get("buildID") ?? ""
            guard ELFBuildID.isValid(buildID), let sha256 = form["sha256"], !sha256.isEmpty else {
                return message("Not deleted", "No such symbol file.", status: .badRequest)
            }
            let deleted = try await SymbolFileRemoval(index: store, blobs: symbolBlobs)
                .remove(buildID: buildID, sha256: sha256, in: context.scope)
            guard !deleted.isEmpty else { return notFound() }
            return Response(status: .seeOther, headers: [.location: "/symbols"])
        }
        group.get("reports/:id") { _, context in
            guard let stored = try await store.report(id: try context.id(), in: context.scope) else {
                return notFound()
            }
            var values = reportValues(stored)
            // Images whose frames lack debug-info names and whose debug file the store does not have.
            let unresolved = ReportSymbols.imagesLackingDebugInfo(stored.report)
            let archived = try await store.symbolFiles(buildIDs: unresolved, in: context.scope).filter(\.hasDebugInfo)
            let missing = unresolved.filter { id in !archived.contains { $0.buildID == id } }
            values["hasMissingSymbols"] = !missing.isEmpty
            values["missingSymbols"] = missing.map { buildID -> [String: Any] in
                let path = stored.report.images.first { $0.buildID == buildID }?.path ?? ""
                return ["buildID": buildID, "path": path]
            }
            return render("report", values)
        }
        group.get("symbols") { request, context in
            let page = request.page
            let files = try await store.symbolFiles(in: context.scope, page: page)
            let uses = try await store.reportCounts(buildIDs: files.map(\.buildID), in: context.scope)
            let missing = try await store.missingSymbols(in: context.scope, page: Page(limit: 100))
            var values: [String: Any] = [
                "title": "Symbols", "symbolizer": symbolizer ?? "", "hasFiles": !files.isEmpty,
                "csrf": WebSessions.formToken(for: request) ?? "",
                "files": files.map { file -> [String: Any] in
                    var values: [String: Any] = [
                        "buildID": file.buildID, "fileName": file.fileName, "size": file.size,
                        "sha256": file.sha256, "uploadedAt": iso(file.uploadedAt), "reports": uses[file.buildID] ?? 0,
                        "contents": [file.hasDebugInfo ? "debug info" : nil, file.hasCode ? "code" : nil]
                            .compactMap { $0 }.joined(separator: ", "),
                    ]
                    if file.isLeftOut {
                        values["leftOut"] =
                            "llvm-symbolizer failed \(file.symbolizerFailures) times on it: left out of symbolication"
                    }
                    return values
                },
                "hasMissing": !missing.isEmpty,
                "missing": missing.map { entry -> [String: Any] in
                    ["buildID": entry.buildID, "reports": entry.reports, "lastSeen": iso(entry.lastSeen)]
                },
            ]
            if files.count == page.limit { values["next"] = "/symbols?offset=\(page.offset + page.limit)" }
            return render("symbols", values)
        }
        group.get("releases") { request, context in
            let now = Date()
            let days = Trends.days(30, endingAt: now)
            if let version = request.queryDictionary["version"], !version.isEmpty {
                guard let release = try await store.release(version: version, in: context.scope) else {
                    return notFound()
                }
                let counts = try await store.releaseDays(
                    version: version, in: context.scope, since: days.since, days: 30)
                var query = GroupQuery()
                query.version = version
                query.order = .count
                let groups = try await store.groups(in: context.scope, query: query, page: Page(limit: 10))
                var values = releaseValues(release)
                values["title"] = "Release \(version)"
                values["sessionsChart"] = SVGChart(
                    bars: Trends.bars(counts.sessions, labels: days.labels), name: "chart-sessions"
                )
                .render(labelEvery: 5, caption: "Sessions per day")
                values["crashedChart"] = SVGChart(
                    bars: Trends.bars(zip(counts.sessions, counts.clean).map { $0 - $1 }, labels: days.labels),
                    name: "chart-crashed"
                ).render(labelEvery: 5, caption: "Sessions that did not end cleanly, per day")
                values["groups"] = groups.map { group -> [String: Any] in
                    ["id": group.id, "title": group.title, "count": group.versions[version] ?? 0]
                }
                values["topLink"] = "/?" + query.queryString
                return render("release", values)
            }
            let releases = try await store.releases(in: context.scope, page: request.page)
            var rows: [[String: Any]] = []
            for release in releases {
                var row = releaseValues(release)
                let counts = try await store.releaseDays(
                    version: release.version, in: context.scope, since: days.since, days: 30)
                row["sparkline"] = SVGChart(bars: Trends.bars(counts.sessions, labels: days.labels), name: "sparkline")
                    .sparkline()
                rows.append(row)
            }
            return render("releases", ["title": "Releases", "hasReleases": !releases.isEmpty, "releases": rows])
        }
        group.get("project") { request, context in
            let projectID = context.scope.projectID
            let project = try await store.projects().first { $0.id == projectID }
            let keys = try await store.keys().filter { $0.projectID == projectID }
            let base = publicURL ?? "http://\(request.head.authority ?? "localhost")"
            return render(
                "project",
                [
                    "title": "Project", "name": project?.name ?? "", "id": projectID, "publicURL": base,
                    "dsnTemplate": SentryAuthentication.dsn(
                        publicURL: base, ingestKey: "<ingest key>", projectID: projectID
                    )
                    .removingPercentEncoding ?? "",
                    "keys": keys.map { key -> [String: Any] in
                        [
                            "id": key.id, "kind": key.kind.rawValue, "prefix": key.prefix,
                            "createdAt": iso(key.createdAt),
                            "state": key.revokedAt.map { "revoked \(iso($0))" } ?? "active",
                        ]
                    },
                ])
        }
        group.get("alerts") { _, context in
            let webhooks = try await store.webhooks(in: context.scope)
            let deliveries = try await store.deliveries(webhookID: nil, in: context.scope, page: Page(limit: 50))
            return render(
                "alerts",
                [
                    "title": "Alerts", "hasWebhooks": !webhooks.isEmpty, "hasDeliveries": !deliveries.isEmpty,
                    "webhooks": webhooks.map { webhook -> [String: Any] in
                        [
                            "id": webhook.id, "url": webhook.url,
                            "events": webhook.events.map(\.rawValue).joined(separator: ", "),
                            "format": webhook.format.rawValue, "signed": webhook.signed ? "yes" : "no",
                            "threshold": webhook.threshold.map { "more than \($0.count) in \($0.minutes) min" } ?? "",
                        ]
                    },
                    "deliveries": deliveries.map { delivery -> [String: Any] in
                        [
                            "createdAt": iso(delivery.createdAt), "webhookID": delivery.webhookID,
                            "event": delivery.event.rawValue, "groupID": delivery.groupID,
                            "state": delivery.state.rawValue, "attempts": delivery.attempts,
                            "answer": delivery.lastStatus.map { "HTTP \($0)" } ?? delivery.lastError ?? "",
                        ]
                    },
                ])
        }
        group.get("bundles") { request, context in
            let page = request.page
            let bundles = try await store.bundles(in: context.scope, page: page)
            var values: [String: Any] = [
                "title": "Bundles", "hasBundles": !bundles.isEmpty,
                "bundles": bundles.map { bundle -> [String: Any] in
                    [
                        "id": bundle.id, "receivedAt": iso(bundle.receivedAt), "appName": bundle.appName ?? "",
                        "appVersion": bundle.appVersion ?? "", "host": bundle.host ?? "", "size": bundle.size,
                        "fileCount": bundle.fileCount, "reportCount": bundle.reportCount,
                    ]
                },
            ]
            if bundles.count == page.limit { values["next"] = "/bundles?offset=\(page.offset + page.limit)" }
            return render("bundles", values)
        }
        group.get("bundles/:id") { _, context in
            let id = try context.id()
            guard let bundle = try await store.bundle(id: id, in: context.scope) else { return notFound() }
            let files = try await store.files(bundleID: id, in: context.scope)
            return render(
                "bundle",
                [
                    "title": "Bundle \(id)", "bundle": bundle, "receivedAt": iso(bundle.receivedAt),
                    "files": files.map { file -> [String: Any] in
                        [
                            "id": file.id, "path": file.path, "kind": file.kind.rawValue, "size": file.size,
                            "isLog": file.kind == .log,
                        ]
                    },
                ])
        }
        group.get("files/:id") { _, context in
            guard let file = try await store.file(id: try context.id(), in: context.scope),
                let bundle = try await store.bundle(id: file.bundleID, in: context.scope)
            else { return notFound() }
            // The viewer shows the beginning of a file: a few MiB, not the whole of a 256 MiB log.
            let limit = 20_000
            let lines: [String]
            let truncated: Bool
            // A `.gz` archive too: only as much is read and inflated as the first 8 MiB of text need.
            let (head, isComplete) = try reader.prefix(
                of: file.path, inBlob: bundle.blob, limit: 8 << 20, gunzip: file.path.hasSuffix(".gz"))
            lines = head.withUnsafeBytes { BundleReader.lines(in: $0, maxLineBytes: 8 << 10, maxLines: limit + 1) }
            truncated = !isComplete || lines.count > limit
            return render(
                "file",
                [
                    "title": file.path, "path": file.path, "bundleID": bundle.id, "fileID": file.id,
                    "truncated": truncated, "shown": min(lines.count, limit),
                    "lines": lines.prefix(limit).enumerated().map {
                        ["number": $0.offset + 1, "text": String($0.element)]
                    },
                ])
        }
        // What one failing request's trace left: its reports, in whichever group, and its log lines.
        group.get("traces/:traceID") { _, context in
            guard let traceID = context.parameters.get("traceID").flatMap(TraceID.checked) else {
                return message("Trace", "A trace id is letters, digits, '-', '_', '.' or ':'.", status: .badRequest)
            }
            let reports = try await store.reports(traceID: traceID, in: context.scope, page: Page(limit: 100))
            let lines = try await store.searchLogs(in: context.scope, query: traceID, page: Page(limit: 200))
            return render(
                "trace",
                [
                    "title": "Trace \(traceID)", "traceID": traceID, "hasReports": !reports.isEmpty,
                    "reports": reports.map { report -> [String: Any] in
                        [
                            "id": report.reportID, "groupID": report.groupID, "kind": report.kind,
                            "occurredAt": iso(report.occurredAt), "reason": report.reason ?? "",
                            "version": report.appVersion ?? "", "host": report.host ?? "",
                        ]
                    },
                    "hasLines": !lines.isEmpty, "moreLines": lines.count == 200,
                    "lines": lines.map {
                        ["fileID": $0.fileID, "path": $0.path, "lineNumber": $0.lineNumber, "text": $0.text]
                    },
                ])
        }
        group.get("logs") { request, context in
            let typed = request.queryDictionary["q"] ?? ""
            var values: [String: Any] = ["title": "Logs", "query": typed]
            if case .failure(.tooLong) = SearchQuery.normalized(typed) {
                values["error"] = "Search for at most \(SearchQuery.maxBytes) bytes of words."
            }
            if case .success(let query) = SearchQuery.normalized(typed) {
                let page = request.page
                let hits = try await store.searchLogs(in: context.scope, query: query, page: page)
                let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                var searched: [String: Any] = [
                    "count": hits.count, "more": hits.count == page.limit,
                    "hits": hits.map {
                        ["fileID": $0.fileID, "path": $0.path, "lineNumber": $0.lineNumber, "text": $0.text]
                    },
                ]
                if hits.count == page.limit {
                    searched["next"] = "/logs?q=\(encoded)&offset=\(page.offset + page.limit)"
                }
                values["searched"] = searched
            }
            return render("logs", values)
        }
    }

    /// `/login` (a form for the admin token), `/login/link/<code>` (a one-time link), `/logout`.
    func registerLogin(on router: Router<CollectorContext>) {
        router.get("login") { request, _ in
            loginForm(request, next: request.uri.queryParameters.get("next"))
        }
        router.post("login") { request, _ in
            let form = Self.formFields(String(buffer: try await request.body.collect(upTo: 16 << 10)))
            let expected = request.cookies[WebSessions.formCookieName]?.value ?? ""
            guard !expected.isEmpty, WebSessions.constantTimeEquals(expected, form["csrf"] ?? "") else {
                var response = loginForm(request, next: form["next"], error: "The sign-in form expired: try again.")
                response.status = .forbidden
                return response
            }
            guard let key = try await store.authenticate(secret: form["token"] ?? ""), key.kind == .admin else {
                var response = loginForm(request, next: form["next"], error: "That is not a valid admin token.")
                response.status = .unauthorized
                return response
            }
            var response = try await sessions.start(
                for: key, request: request, redirectTo: WebSessions.safeDestination(form["next"]))
            response.setCookie(Self.formCookie("", maxAge: 0, request: request))
            return response
        }
        router.get("login/link/:code") { request, context in
            let code = context.parameters.get("code") ?? ""
            guard let key = try await store.redeemLink(tokenHash: WebSessions.hash(code), now: Date()),
                key.kind == .admin
            else {
                var response = loginForm(
                    request, next: nil, error: "That sign-in link has expired or was used already.")
                response.status = .unauthorized
                return response
            }
            return try await sessions.start(
                for: key, request: request,
                redirectTo: WebSessions.safeDestination(request.uri.queryParameters.get("next")))
        }
        router.post("logout") { request, _ in
            // Another site's page must not sign a browser out either.
            guard WebSessions.isSameOrigin(request) else { return Response(status: .forbidden) }
            return try await sessions.end(request)
        }
    }

    /// The form, with a fresh anti-forgery token in a hidden field and in a cookie.
    private func loginForm(_ request: Request, next: String?, error: String? = nil) -> Response {
        let csrf = WebSessions.newToken()
        var values: [String: Any] = ["title": "Sign in", "csrf": csrf, "next": WebSessions.safeDestination(next)]
        if let error { values["error"] = error }
        var response = render("login", values)
        response.setCookie(Self.formCookie(csrf, maxAge: 3600, request: request))
        return response
    }

    private static func formCookie(_ value: String, maxAge: Int, request: Request) -> Cookie {
        Cookie(
            name: WebSessions.formCookieName, value: value, maxAge: maxAge, path: "/login",
            secure: WebSessions.isSecure(request), httpOnly: true, sameSite: .strict)
    }

    /// `application/x-www-form-urlencoded` fields (the first of each name).
    static func formFields(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2,
                let name = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                fields[name] == nil
            else { continue }
            fields[name] = value
        }
        return fields
    }

    // MARK: Helpers

    private func render(_ template: String, _ values: [String: Any]) -> Response {
        let html = library.render(values, withTemplate: template) ?? "template \(template) is missing"
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    private func notFound() -> Response {
        message("Not found", "There is no such page in this project.", status: .notFound)
    }

    private func message(_ title: String, _ text: String, status: HTTPResponse.Status) -> Response {
        var response = render("login", ["title": title, "error": text])
        response.status = status
        return response
    }

    /// The group page's trend charts: the last 24 hours by hour, the last 30 days by day, and by version.
    private func charts(for group: CrashGroup, in scope: ProjectScope) async throws -> [String: Any] {
        let now = Date()
        let hours = Trends.hours(24, endingAt: now)
        let days = Trends.days(30, endingAt: now)
        let byHour =
            try await store.occurrenceHistogram(
                groupIDs: [group.id], in: scope, since: hours.since, bucketSeconds: 3600, buckets: 24)[group.id] ?? []
        let byDay =
            try await store.occurrenceHistogram(
                groupIDs: [group.id], in: scope, since: days.since, bucketSeconds: 86_400, buckets: 30)[group.id] ?? []
        let versions = Trends.versionBars(group.versions, limit: 12)
        return [
            "hours": SVGChart(bars: Trends.bars(byHour, labels: hours.labels), name: "chart-hours")
                .render(labelEvery: 3, caption: "Occurrences in the last 24 hours, by hour"),
            "days": SVGChart(bars: Trends.bars(byDay, labels: days.labels), name: "chart-days")
                .render(labelEvery: 5, caption: "Occurrences in the last 30 days, by day"),
            "versions": SVGChart(bars: versions, name: "chart-versions")
                .render(caption: "Occurrences by app version"),
        ]
    }

    private func releaseValues(_ release: ReleaseHealth) -> [String: Any] {
        [
            "version": release.version,
            "link":
                "/releases?version=\(release.version.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
            "sessions": release.sessions, "clean": release.clean, "crashed": release.crashed, "hung": release.hung,
            "killed": release.killed, "crashFree": String(format: "%.1f %%", release.crashFreeRate * 100),
            "groupCount": release.groups, "lastDay": iso(release.lastDay),
        ]
    }

    /// The groups page's filter form, filled in with the query it shows.
    private func filterValues(_ query: GroupQuery) -> [String: Any] {
        [
            "q": query.text ?? "", "kind": query.kind ?? "", "version": query.version ?? "", "host": query.host ?? "",
            "trace": query.traceID ?? "",
            "states": ([nil] + GroupStatus.State.allCases).map { state -> [String: Any] in
                [
                    "value": state?.rawValue ?? "", "name": state?.rawValue ?? "any state",
                    "selected": state == query.state,
                ]
            },
            "orders": GroupQuery.Order.allCases.map { order -> [String: Any] in
                ["value": order.rawValue, "name": order.rawValue, "selected": order == query.order]
            },
        ]
    }

    /// The group page's state line and the forms that change it.
    private func statusValues(_ group: CrashGroup, request: Request) -> [String: Any] {
        var detail = ""
        switch group.state {
        case .resolved:
            detail =
                group.resolvedIn.map { "in \($0)" } ?? group.resolvedAfter.map { "in the version after \($0)" }
                ?? "outright: any occurrence reopens it"
        case .ignored:
            detail = [
                group.ignoredUntilCount.map { "until it reaches \($0) occurrences" },
                group.ignoredUntil.map { "until \(iso($0))" },
            ].compactMap { $0 }.joined(separator: " or ")
            if detail.isEmpty { detail = "forever" }
        case .open, .regressed:
            break
        }
        return [
            "state": group.state.rawValue, "detail": detail, "groupID": group.id,
            "csrf": WebSessions.formToken(for: request) ?? "", "isOpen": group.state == .open,
            // A group never triaged has been open since it was first seen.
            "changedAt": iso(group.stateChangedAt ?? group.firstSeen),
        ]
    }

    private func signatureText(of group: CrashGroup, in scope: ProjectScope) async throws -> String {
        guard let latest = group.latestReportID, let report = try await store.report(id: latest, in: scope) else {
            return group.signature
        }
        return CrashSignature.compute(report.report).text
    }

    private func summary(_ counts: [String: Int]) -> String {
        counts.sorted { $0.value == $1.value ? $0.key < $1.key : $0.value > $1.value }.map { "\($0.key) (\($0.value))" }
            .joined(separator: ", ")
    }

    private func stackText(_ report: CrashReport) -> String {
        report.frames.prefix(30).map { frame in
            let name = frame.symbols.map(\.function).reversed().joined(separator: " → ")
            return "\(frame.index)  \(frame.address)  \(name.isEmpty ? (frame.imageOffset ?? "?") : name)"
        }.joined(separator: "\n")
    }

    /// A row per symbol (inlined frames get their own), or one per unnamed frame.
    static func describe(_ symbolication: ReportSymbolication, report: CrashReport) -> String {
        switch symbolication.state {
        case .pending:
            symbolication.attempts == 0
                ? "waiting"
                : "waiting (\(symbolication.attempts) failed attempt\(symbolication.attempts == 1 ? "" : "s"))"
        case .missing:
            // Images without debug files, but none of their frames left unnamed (their symbol tables
            // named them): nothing to wait for.
            report.stacks.joined().contains { $0.symbols.isEmpty && $0.imageIndex != nil }
                ? "done with the debug files uploaded so far; waiting for the missing ones" : "done"
        case .done: "done"
        case .failed: "failed: \(symbolication.failure ?? "no reason recorded")"
        }
    }

    /// How the library learned a throw site (`error.site.from`), in words.
    private static func throwSiteOrigin(_ origin: String) -> String {
        switch origin {
        case "error": "where the error was made"
        case "thrown": "marked with Blackbox.thrown"
        case "logged": "where the app logged it"
        default: "unknown"
        }
    }

    private func reportValues(_ stored: StoredReport) -> [String: Any] {
        let report = stored.report
        var facts: [[String: String]] = [
            ["name": "Kind", "value": report.kind.rawValue + (report.partial ? " (partial)" : "")],
            [
                "name": "App",
                "value": [report.app.name, report.app.version, report.app.build.map { "(\($0))" }].compactMap { $0 }
                    .joined(separator: " "),
            ],
            ["name": "Host", "value": "\(report.host.name), \(report.host.os), \(report.host.architecture)"],
            ["name": "Time", "value": iso(report.process.crashTime)],
        ]
        // An event through the Sentry protocol knows no process; an interpreted language's, no platform
        // but its own.
        if report.process.pid != 0 || report.process.path != nil {
            facts.append(["name": "Process", "value": "\(report.process.pid) \(report.process.path ?? "")"])
        }
        if let platform = report.metadata["sentry.platform"] {
            facts.append(["name": "Platform", "value": "\(platform) (through the Sentry protocol)"])
        }
        if let signal = report.signal {
            facts.append([
                "name": "Signal",
                "value": "\(signal.name) (\(signal.number)), code \(signal.code) \(signal.codeName ?? "")",
            ])
            facts.append(["name": "Fault address", "value": signal.faultAddress])
        }
        if let reason = report.reason { facts.append(["name": "Reason", "value": reason]) }
        if let site = CrashSignature.ThrowSite(report) {
            let function = site.function.isEmpty ? "" : " in \(site.function)"
            let from = report.metadata["error.site.from"].map { " (\(Self.throwSiteOrigin($0)))" } ?? ""
            facts.append(["name": "Thrown at", "value": site.location + function + from])
        }
        if let termination = report.termination {
            facts.append(["name": "Cause", "value": termination.cause])
            facts.append([
                "name": "Died between",
                "value": "\(iso(termination.lastSeenAlive)) (last sign of life) and \(iso(termination.detectedAt))",
            ])
        }
        if let symbols = report.symbolicationSummary { facts.append(["name": "Symbols", "value": symbols]) }
        if let symbolication = stored.symbolication {
            facts.append(["name": "Symbolication here", "value": Self.describe(symbolication, report: report)])
        }
        // Collapsed, each summarized by the first function of the app's own it is in.
        let appCode = AppCode(report)
        let otherThreads: [[String: Any]] = (report.threads?.dropFirst() ?? []).map { thread in
            var values: [String: Any] = [
                "id": thread.id, "name": thread.name ?? "", "frameSource": thread.frameSource,
                "frameCount": thread.frames.count,
                "top": appCode.culprit(in: thread.frames).map { SwiftNames.simplified($0.function) }
                    ?? thread.frames.first?.symbols.last.map { SwiftNames.simplified($0.function) } ?? "",
                "frames": ReportPage.frameRows(thread.frames, in: report, appCode: appCode),
            ]
            // Absent, not empty: the template's section shows for any string.
            // False, not absent: Mustache looks an absent name up in the enclosing context, and every
            // thread then showed the crashed report's own scope ("serving [[…]]").
            values["problem"] = thread.problem ?? false
            values["scope"] = false
            if let scope = thread.scope, !scope.isEmpty {
                values["scope"] = scope.keys.sorted().map { "\($0) \(scope[$0] ?? "")" }.joined(separator: ", ")
            }
            return values
        }
        var values: [String: Any] = [
            "title": report.reason ?? report.signal?.name ?? report.kind.rawValue,
            "headline": CrashSignature.headline(report),
            "facts": facts, "threadID": report.thread.id,
            "threadName": report.thread.name ?? "", "frameSource": report.frameSource,
            "frames": ReportPage.frameRows(report.frames, in: report, appCode: appCode),
            "hasOtherThreads": !otherThreads.isEmpty,
            "otherThreadCount": otherThreads.count, "otherThreads": otherThreads,
            "omitted": report.omittedFrames.map { "\($0.count) frames omitted after frame \($0.omittedAfterIndex)" }
                ?? "",
            "hasScope": !(report.scope ?? [:]).isEmpty,
            "scope": (report.scope ?? [:]).sorted { $0.key < $1.key }.map { ["name": $0.key, "value": $0.value] },
            "hasAnnotations": !(report.annotations ?? [:]).isEmpty,
            "annotations": (report.annotations ?? [:]).sorted { $0.key < $1.key }.map {
                ["name": $0.key, "value": $0.value]
            },
            "hasRegisters": !report.registers.isEmpty,
            "registers": report.registers.map { ["name": $0.name, "value": $0.value] },
            "hasImages": !report.images.isEmpty,
            "images": report.images.map {
                ["start": $0.start, "end": $0.end, "buildID": $0.buildID ?? "", "path": $0.path]
            },
            "hasAddresses": ReportPage.hasAddresses(report),
            "hasLogTail": !report.logTail.isEmpty, "logTail": report.logTail, "hasNotes": !report.notes.isEmpty,
            "notes": report.notes, "groupID": stored.groupID, "bundleID": stored.bundleID, "reportID": stored.id,
        ]
        // The request's trace, when its scope had one: its log lines carry the id (swift-otel's provider).
        if let trace = report.scope?["trace-id"], !trace.isEmpty {
            values["traceID"] = trace
            values["traceQuery"] = trace.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        }
        // Absent, not empty: the template's section shows for any string (release builds have none).
        if let message = report.fatalMessage, !message.isEmpty { values["fatalMessage"] = message }
        return values
    }
}

private func iso(_ date: Date) -> String { date.formatted(.iso8601) }
