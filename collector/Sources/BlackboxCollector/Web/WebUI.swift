import BlackboxFormat
import Foundation
import Hummingbird
import Mustache

/// The server-rendered web UI (swift-mustache templates in Web/Templates). Every value from an upload
/// is HTML-escaped by the templates (`{{…}}`); pages work without JavaScript.
struct WebUI {
    let store: any CollectorStore
    let reader: BundleReader
    let library: MustacheLibrary

    static func loadTemplates() async throws -> MustacheLibrary {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("Templates").path else {
            throw StorageError.notFound("the web UI templates")
        }
        return try await MustacheLibrary(directory: directory)
    }

    func register(on group: RouterGroup<CollectorContext>) {
        group.get("/") { request, context in
            let page = request.page
            let groups = try await store.groups(projectID: context.projectID, page: page)
            var values: [String: Any] = [
                "title": "Crash groups", "hasGroups": !groups.isEmpty,
                "groups": groups.map { group -> [String: Any] in
                    [
                        "id": group.id, "title": group.title, "kind": group.kind, "count": group.count,
                        "lastSeen": iso(group.lastSeen), "versions": summary(group.versions),
                    ]
                },
            ]
            if groups.count == page.limit { values["next"] = "/?offset=\(page.offset + page.limit)" }
            return render("groups", values)
        }
        group.get("groups/:id") { request, context in
            let id = try context.id()
            guard let group = try await store.group(id: id), group.projectID == context.projectID else {
                return notFound()
            }
            let occurrences = try await store.occurrences(groupID: id, page: request.page)
            var values: [String: Any] = [
                "title": group.title, "group": group, "firstSeen": iso(group.firstSeen),
                "lastSeen": iso(group.lastSeen),
                "versions": summary(group.versions), "hosts": summary(group.hosts),
                "signatureText": try await signatureText(of: group),
                "occurrences": occurrences.map { occurrence -> [String: Any] in
                    [
                        "reportID": occurrence.reportID, "bundleID": occurrence.bundleID,
                        "occurredAt": iso(occurrence.occurredAt), "appVersion": occurrence.appVersion ?? "",
                        "host": occurrence.host ?? "", "reason": occurrence.reason ?? "",
                    ]
                },
            ]
            if let latestID = group.latestReportID, let latest = try await store.report(id: latestID) {
                values["latest"] = [
                    "reportID": latestID, "reason": latest.report.reason ?? "",
                    "fatalMessage": latest.report.fatalMessage ?? "", "stack": stackText(latest.report),
                ]
            }
            return render("group", values)
        }
        group.get("reports/:id") { _, context in
            guard let stored = try await store.report(id: try context.id()),
                try await store.group(id: stored.groupID)?.projectID == context.projectID
            else { return notFound() }
            return render("report", reportValues(stored))
        }
        group.get("bundles") { request, context in
            let page = request.page
            let bundles = try await store.bundles(projectID: context.projectID, page: page)
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
            guard let bundle = try await store.bundle(id: id), bundle.projectID == context.projectID else {
                return notFound()
            }
            let files = try await store.files(bundleID: id)
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
            guard let file = try await store.file(id: try context.id()),
                let bundle = try await store.bundle(id: file.bundleID), bundle.projectID == context.projectID
            else { return notFound() }
            let lines = try reader.lines(of: file.path, inBlob: bundle.blob)
            let limit = 20_000
            return render(
                "file",
                [
                    "title": file.path, "path": file.path, "bundleID": bundle.id, "fileID": file.id,
                    "truncated": lines.count > limit, "shown": limit,
                    "lines": lines.prefix(limit).enumerated().map {
                        ["number": $0.offset + 1, "text": String($0.element)]
                    },
                ])
        }
        group.get("logs") { request, context in
            let query = request.uri.queryParameters.get("q") ?? ""
            var values: [String: Any] = ["title": "Logs", "query": query]
            if !query.trimmingCharacters(in: .whitespaces).isEmpty {
                let page = request.page
                let hits = try await store.searchLogs(projectID: context.projectID, query: query, page: page)
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

    /// `/login`: a form, or `?token=` (the link `make run` prints), which sets the admin cookie.
    func registerLogin(on router: Router<CollectorContext>) {
        router.get("login") { request, _ in
            if let token = request.uri.queryParameters.get("token") {
                return try await signIn(token, then: request.uri.queryParameters.get("next"))
            }
            return render("login", ["title": "Sign in"])
        }
        router.post("login") { request, _ in
            let body = try await request.body.collect(upTo: 16 << 10)
            let form = String(buffer: body)
            let token = form.split(separator: "&").compactMap { pair -> String? in
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0] == "token" else { return nil }
                return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }.first
            return try await signIn(token ?? "", then: nil)
        }
    }

    /// `next` must be a path on this server (never another site).
    private func signIn(_ token: String, then next: String?) async throws -> Response {
        guard let key = try await store.authenticate(secret: token), key.kind == .admin else {
            var response = render("login", ["title": "Sign in", "error": "That is not a valid admin token."])
            response.status = .unauthorized
            return response
        }
        let destination = next.flatMap { $0.hasPrefix("/") && !$0.hasPrefix("//") ? $0 : nil } ?? "/"
        var response = Response(status: .seeOther, headers: [.location: destination])
        response.setCookie(
            Cookie(
                name: AdminAuthentication.cookieName, value: token, maxAge: 30 * 86_400, path: "/", httpOnly: true,
                sameSite: .strict))
        return response
    }

    // MARK: Helpers

    private func render(_ template: String, _ values: [String: Any]) -> Response {
        let html = library.render(values, withTemplate: template) ?? "template \(template) is missing"
        return Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    private func notFound() -> Response {
        var response = render("login", ["title": "Not found", "error": "There is no such page in this project."])
        response.status = .notFound
        return response
    }

    private func signatureText(of group: CrashGroup) async throws -> String {
        guard let latest = group.latestReportID, let report = try await store.report(id: latest) else {
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
            ["name": "Process", "value": "\(report.process.pid) \(report.process.path ?? "")"],
        ]
        if let signal = report.signal {
            facts.append([
                "name": "Signal",
                "value": "\(signal.name) (\(signal.number)), code \(signal.code) \(signal.codeName ?? "")",
            ])
            facts.append(["name": "Fault address", "value": signal.faultAddress])
        }
        if let reason = report.reason { facts.append(["name": "Reason", "value": reason]) }
        var frames: [[String: Any]] = []
        for frame in report.frames {
            let image = frame.imageIndex.flatMap { report.images.indices.contains($0) ? report.images[$0].path : nil }
            let imageName = image.map { String($0.split(separator: "/").last ?? "") } ?? "?"
            if frame.symbols.isEmpty {
                frames.append([
                    "index": frame.index, "image": imageName, "address": frame.address,
                    "function": frame.imageOffset.map { "\(imageName) + \($0)" } ?? "?", "location": "",
                    "inlined": false,
                ])
            }
            for symbol in frame.symbols {
                frames.append([
                    "index": frame.index, "image": imageName, "address": frame.address, "function": symbol.function,
                    "location": symbol.file.map { "\($0)\(symbol.line.map { ":\($0)" } ?? "")" } ?? "",
                    "inlined": symbol.inlined,
                ])
            }
        }
        return [
            "title": report.reason ?? report.signal?.name ?? report.kind.rawValue,
            "headline": [report.signal?.name, report.reason].compactMap { $0 }.joined(separator: ": "),
            "facts": facts, "fatalMessage": report.fatalMessage ?? "", "threadID": report.thread.id,
            "threadName": report.thread.name ?? "", "frameSource": report.frameSource, "frames": frames,
            "omitted": report.omittedFrames.map { "\($0.count) frames omitted after frame \($0.omittedAfterIndex)" }
                ?? "",
            "hasRegisters": !report.registers.isEmpty,
            "registers": report.registers.map { ["name": $0.name, "value": $0.value] },
            "images": report.images.map {
                ["start": $0.start, "end": $0.end, "buildID": $0.buildID ?? "", "path": $0.path]
            },
            "hasLogTail": !report.logTail.isEmpty, "logTail": report.logTail, "hasNotes": !report.notes.isEmpty,
            "notes": report.notes, "groupID": stored.groupID, "bundleID": stored.bundleID, "reportID": stored.id,
        ]
    }
}

private func iso(_ date: Date) -> String { date.formatted(.iso8601) }
