import Blackbox

#if canImport(Glibc)
    import Glibc
#endif

// One benchmark run in a fresh process; bench/run.py alternates runs and competitors.
// Usage: blackbox-bench WORKLOAD COMPETITOR DIR
//   WORKLOAD   W1 (1 thread, 1 M INFO lines, per-call latency)
//              W2 (4 threads x 250 k lines, until every line is written and the file closed)
//              W3 (10 M calls below the enabled level)
//              W4 (1 thread, 1 M INFO lines through swift-log with 8 metadata values: the logger's,
//                  the call's and a provider's; noop is then a handler that merges them and drops them,
//                  noop-bare the W1 no-op, which ignores them)
//              W5 (1 thread, 1 M ERROR lines through swift-log with one metadata value; swiftlog+error
//                  adds an `error:`, swiftlog+private marks the value sensitive)
//              W5P (W5's form and the plain call in alternating blocks of one process: each one's
//                  caller CPU per call and their ratio, with the spread of the blocks' ratios)
//   COMPETITOR native | swiftlog | noop (swift-log with a handler that does nothing: the frontend floor)
// Prints one JSON object: workload, competitor, mean_ns, p50_ns, p99_ns, p999_ns, msgs_per_s, peak_rss_mb, lines.

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    print("usage: blackbox-bench W1|W2|W3|W4|W5|W5P native|swiftlog|noop DIR")
    exit(2)
}
print(runBenchmark(workload: arguments[1], competitor: arguments[2], directory: arguments[3]))
