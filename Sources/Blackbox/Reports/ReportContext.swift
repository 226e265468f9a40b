import BlackboxFormat

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// What every report a living process writes says about where it came from (the app, the machine,
/// the executable, the configured metadata), read once per core instead of by each report: `uname`,
/// `/etc/os-release` and `/proc/self/exe` do not change while a process runs (swift-otel's
/// `OTelResource` habit). The pid and the process's start time are read per report, since a forked
/// child is another process; the annotations too, since the app changes them.
struct ReportContext: Sendable {
    let app: CrashReport.App
    let host: CrashReport.Host
    let executablePath: String?
    let metadata: [String: String]

    init(_ configuration: BlackboxConfiguration) {
        self.app = .init(name: configuration.appName, version: configuration.appVersion, build: configuration.appBuild)
        self.host = CrashCapture.currentHost()
        self.executablePath = CrashCapture.executablePath()
        self.metadata = configuration.crashReporting.metadata
    }

    /// A report of `kind` about this process at `time`, naming `thread`: the rest is the producer's.
    func report(_ kind: CrashReport.Kind, thread: CrashReport.ThreadDetails, at time: Date = Date()) -> CrashReport {
        var report = CrashReport(
            kind: kind, app: app, host: host, process: .init(pid: getpid(), crashTime: time), thread: thread)
        describe(&report, at: time)
        return report
    }

    /// Says where `report` came from: this app, machine and process at `time`, the configured
    /// metadata and the annotations set now.
    func describe(_ report: inout CrashReport, at time: Date = Date()) {
        report.app = app
        report.host = host
        report.process = .init(
            pid: getpid(), path: executablePath,
            startTime: CrashCapture.processStartTime().map { Date(timeIntervalSince1970: $0) }, crashTime: time)
        report.metadata = metadata
        let annotations = CrashAnnotations.current
        report.annotations = annotations.isEmpty ? nil : annotations
    }
}
