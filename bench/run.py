#!/usr/bin/env python3
"""Runs the logger benchmark: Blackbox (native API, swift-log path), a no-op swift-log handler (the
frontend floor) and spdlog 1.10 (sync and async), alternated, each run in a fresh process and a fresh
directory on the same file system. Prints a table with medians (min-max) and the bar ratios, and writes
one JSON object per workload and competitor.

Usage: run.py --blackbox PATH --spdlog PATH --out FILE [--reps N] [--workloads W1,W2,W3,W4,W5]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from compare_builds import error_call_cost

COMPETITORS = {
    "W1": ["native", "swiftlog", "noop", "spdlog-sync", "spdlog-async"],
    "W2": ["native", "swiftlog", "spdlog-sync", "spdlog-async"],
    "W3": ["native", "swiftlog", "noop", "spdlog-sync", "spdlog-async"],
    # swift-log with 8 metadata values; noop merges them and drops them, noop-bare ignores them
    # (blackbox-bench's W4).
    "W4": ["swiftlog", "noop", "noop-bare", "spdlog-sync", "spdlog-async"],
    # W1's call at .error with one metadata value: plain, with an `error:` (captured as an error,
    # rate-limited per site), with the value marked sensitive (blackbox-bench's W5).
    "W5": ["swiftlog", "swiftlog+error", "swiftlog+describederror", "swiftlog+private"],
}
FIELDS = ["mean_ns", "p50_ns", "p99_ns", "p999_ns", "msgs_per_s", "peak_rss_mb"]
# Not in the table: CPU per line of the whole process and of the calling threads alone (W2), and of
# Blackbox's writer thread (W1, W2, W4).
CPU_FIELDS = ["cpu_ns_per_line", "caller_cpu_ns_per_line", "writer_cpu_ns_per_line"]
JOURNAL_MIB = 4  # Blackbox's default journal size, used by the benchmark


def run_once(args, workload, competitor, scratch, env=None):
    directory = tempfile.mkdtemp(prefix=f"{workload}-{competitor}-", dir=scratch)
    try:
        if competitor.startswith("spdlog-"):
            command = [args.spdlog, workload, competitor.split("-", 1)[1], directory]
        else:
            command = [args.blackbox, workload, competitor, directory]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
        if completed.returncode != 0:
            sys.exit(f"{' '.join(command)} failed ({completed.returncode}): {completed.stderr[-2000:]}")
        result = json.loads(completed.stdout.strip().splitlines()[-1])
        if workload == "W2":
            ours = not competitor.startswith("spdlog-")
            log = os.path.join(directory, "logs", "bench.log") if ours else os.path.join(directory, "spdlog.log")
            result["verified"] = verify_w2(log, check_order=ours)
            if competitor.endswith("+journald"):
                result["journal_entries"] = journal_entries("bench-" + os.path.basename(directory))
        return result
    finally:
        shutil.rmtree(directory, ignore_errors=True)


ID = re.compile(rb"request id=(\d+) user=alice took (\d+) ms")


def verify_w2(path, check_order):
    """Every line present once; for Blackbox also in order per thread (ids are thread * 1e6 + n)."""
    expected_next = [0, 0, 0, 0]
    count = 0
    with open(path, "rb") as log:
        for line in log:
            match = ID.search(line)
            if not match:
                continue
            count += 1
            if check_order:
                value = int(match.group(1))
                thread, n = divmod(value, 1_000_000)
                if thread > 3 or n != expected_next[thread]:
                    return f"out of order at thread {thread} n={n}"
                expected_next[thread] += 1
    if count != 1_000_000:
        return f"{count} lines instead of 1000000"
    return "ok"


def journal_entries(identifier):
    """How many entries of this run the journal holds (the journal is best effort: the file has every line)."""
    listed = subprocess.run(["journalctl", "-t", identifier, "-o", "cat", "--no-pager"], capture_output=True,
                            timeout=600)
    return listed.stdout.count(b"\n")


# Issue 52's bar, measured within one process (blackbox-bench's W5P): a W5 form and the same call
# without its part take turns in blocks of 20,000 calls, each block's CPU read from the caller's own
# clock. Across processes (W5) one binary's caller CPU differs by a tenth from run to run on this VM,
# as wide as the bar. A call with an error is compared with the same call whose caller made the same
# error without passing it (`control`): an app logs an error it caught, and making the error (its box)
# is the app's either way. What the form adds is taken over the plain call (`error_call_cost`).
# Each form outside and inside a request's scope (BLACKBOX_BENCH_SCOPE=1: a server's calls run in one).
ERROR_CALL_FORMS = {"swiftlog+error": "with error:", "swiftlog+describederror": "with a self-describing error",
                    "swiftlog+private": "private value"}


def error_call_costs(args, scratch):
    """{(form, in_scope): [one process's {"added", "plain", "form", "control"} in ns per call]}"""
    cases = [(form, scope) for scope in (False, True) for form in ERROR_CALL_FORMS]
    costs = {case: [] for case in cases}
    for rep in range(args.reps):
        for form, scope in cases if rep % 2 == 0 else list(reversed(cases)):
            env = dict(os.environ, BLACKBOX_BENCH_SCOPE="1") if scope else None
            costs[(form, scope)].append(error_call_cost(run_once(args, "W5P", form, scratch, env)))
            print(f"  W5P rep {rep + 1}/{args.reps} {form}{' in a scope' if scope else ''}", file=sys.stderr)
    return costs


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def fmt(summary, digits=0):
    if summary is None:
        return "-"
    f = f"{{:.{digits}f}}"
    return f"{f.format(summary['median'])} ({f.format(summary['min'])}-{f.format(summary['max'])})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blackbox", required=True)
    parser.add_argument("--spdlog", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workloads", default="W1,W2,W3,W4,W5")
    parser.add_argument(
        "--hang-watchdog", action="store_true",
        help="also run native+hang and swiftlog+hang (the hang watchdog on, guarding a queue and a heartbeat) in W1 and W2")
    parser.add_argument(
        "--journald", action="store_true",
        help="W2 with the file alone and with the file and the systemd journal (native+journald, swiftlog+journald); "
             "run inside bench/journald_run.sh, which starts a journald of its own")
    args = parser.parse_args()
    if args.journald:
        COMPETITORS["W2"] = ["native", "native+journald", "swiftlog", "swiftlog+journald"]
    if args.hang_watchdog:
        for workload in ("W1", "W2"):
            COMPETITORS[workload] = COMPETITORS[workload] + ["native+hang", "swiftlog+hang"]
    scratch = os.path.join(os.path.dirname(os.path.abspath(args.out)), "scratch")
    os.makedirs(scratch, exist_ok=True)

    results = {}
    for workload in args.workloads.split(","):
        runs = {c: [] for c in COMPETITORS[workload]}
        for rep in range(args.reps):
            # Alternate the order each repetition so no competitor always runs first or last.
            order = COMPETITORS[workload] if rep % 2 == 0 else list(reversed(COMPETITORS[workload]))
            for competitor in order:
                runs[competitor].append(run_once(args, workload, competitor, scratch))
                print(f"  {workload} rep {rep + 1}/{args.reps} {competitor}", file=sys.stderr)
        results[workload] = runs
    error_costs = error_call_costs(args, scratch) if "W5" in results else {}

    rows = []
    print()
    print(f"{'workload':8} {'competitor':14} {'mean ns':>22} {'p50 ns':>18} {'p99 ns':>20} {'p99.9 ns':>22} {'msgs/s':>30} {'peak RSS MB':>18}")
    for workload, runs in results.items():
        for competitor, samples in runs.items():
            summary = {field: summarize([s.get(field) for s in samples]) for field in FIELDS}
            verified = sorted({s.get("verified") for s in samples if s.get("verified")})
            row = {"workload": workload, "competitor": competitor}
            for field in FIELDS:
                row[field] = summary[field]["median"] if summary[field] else None
            for field in CPU_FIELDS:
                cpu = summarize([s.get(field) for s in samples])
                if cpu:
                    row[field] = cpu["median"]
                    summary[field] = cpu
            row["range"] = {field: summary[field] for field in FIELDS + CPU_FIELDS if summary.get(field)}
            row["repetitions"] = len(samples)
            if verified:
                row["verified"] = verified
            rows.append(row)
            print(
                f"{workload:8} {competitor:14} {fmt(summary['mean_ns'], 1):>22} {fmt(summary['p50_ns']):>18} {fmt(summary['p99_ns']):>20} "
                f"{fmt(summary['p999_ns']):>22} {fmt(summary['msgs_per_s']):>30} {fmt(summary['peak_rss_mb'], 1):>18}"
                + (f"  lines: {', '.join(verified)}" if verified else "")
            )

    def value(workload, competitor, field):
        for row in rows:
            if row["workload"] == workload and row["competitor"] == competitor:
                return row.get(field)
        return None

    def ratio(a, b):
        return None if a is None or b in (None, 0) else a / b

    bars = []

    def bar(name, measured, limit, higher_is_better=False):
        if measured is None:
            bars.append({"bar": name, "ratio": None, "limit": limit, "met": None})
            return
        met = measured >= limit if higher_is_better else measured <= limit
        bars.append({"bar": name, "ratio": round(measured, 3), "limit": limit, "met": met})

    if "W1" in results:
        for competitor in ("native", "swiftlog"):
            writer = value("W1", competitor, "writer_cpu_ns_per_line")
            if writer is not None:
                print(f"  W1 {competitor}: the writer thread's CPU per line {writer:.0f} ns (not on the caller's time)")
        bar("W1 native mean / spdlog sync mean", ratio(value("W1", "native", "mean_ns"), value("W1", "spdlog-sync", "mean_ns")), 0.3)
        bar("W1 swift-log mean / no-op swift-log mean", ratio(value("W1", "swiftlog", "mean_ns"), value("W1", "noop", "mean_ns")), 1.1)
        bar("W1 swift-log p99 / spdlog async p99", ratio(value("W1", "swiftlog", "p99_ns"), value("W1", "spdlog-async", "p99_ns")), 1.0)
    if "W2" in results:
        bar("W2 native msgs/s / spdlog sync", ratio(value("W2", "native", "msgs_per_s"), value("W2", "spdlog-sync", "msgs_per_s")), 3.0, True)
        bar("W2 swift-log msgs/s / spdlog sync", ratio(value("W2", "swiftlog", "msgs_per_s"), value("W2", "spdlog-sync", "msgs_per_s")), 1.5, True)
        for competitor in ("native", "swiftlog"):
            rss = value("W2", competitor, "peak_rss_mb")
            bar(f"W2 {competitor} peak RSS MB / (journal + 32 MiB)", ratio(rss, JOURNAL_MIB + 32), 0.6)
            # Not a bar: what the resident memory is at the end (private, and mapped files such as
            # shared libraries, which other processes share).
            cpu, caller = value("W2", competitor, "cpu_ns_per_line"), value("W2", competitor, "caller_cpu_ns_per_line")
            writer = value("W2", competitor, "writer_cpu_ns_per_line")
            if cpu is not None and caller is not None and writer is not None:
                print(f"  W2 {competitor} CPU per line: {cpu:.0f} ns, of which the calling threads {caller:.0f} ns, "
                      f"the writer {writer:.0f} ns")
            ends = [s for s in results["W2"][competitor] if s.get("rss_anon_mb") is not None]
            if ends:
                print(f"  W2 {competitor} at the end: private {statistics.median(s['rss_anon_mb'] for s in ends):.1f} MB, "
                      f"mapped files {statistics.median(s['rss_file_mb'] for s in ends):.1f} MB")
        spdlog_cpu = value("W2", "spdlog-sync", "cpu_ns_per_line")
        if spdlog_cpu is not None:
            print(f"  W2 spdlog sync CPU per line: {spdlog_cpu:.0f} ns")
    if "W3" in results:
        bar("W3 native mean / spdlog sync mean", ratio(value("W3", "native", "mean_ns"), value("W3", "spdlog-sync", "mean_ns")), 1.0)
        bar("W3 swift-log mean / spdlog sync mean", ratio(value("W3", "swiftlog", "mean_ns"), value("W3", "spdlog-sync", "mean_ns")), 1.0)

    if "W5" in results:
        # Not bars: across processes, each form against the plain call, the error made only by the form
        # (the caller's latency also holds waits for a full ring).
        plain_cpu, plain_mean = value("W5", "swiftlog", "caller_cpu_ns_per_line"), value("W5", "swiftlog", "mean_ns")
        for competitor in COMPETITORS["W5"]:
            caller = value("W5", competitor, "caller_cpu_ns_per_line")
            if caller and competitor != "swiftlog":
                print(f"  W5 {competitor}: the caller's CPU per call {caller:.0f} ns ({ratio(caller, plain_cpu):.3f}x the plain "
                      f"call's {plain_cpu:.0f}), mean {ratio(value('W5', competitor, 'mean_ns'), plain_mean):.3f}x")
        for (form, scope), processes in error_costs.items():
            where = " in a scope" if scope else ""
            added = summarize([p["added"] for p in processes])
            cpu = {field: statistics.median(p[field] for p in processes) for field in ("plain", "control", "form")}
            print(f"  W5P {form}{where}: added {added['median']:.3f} ({added['min']:.3f}-{added['max']:.3f}); caller CPU "
                  f"per call {cpu['form']:.0f} ns, the same call without {cpu['control']:.0f} ns, plain {cpu['plain']:.0f} ns")
            bar(f"W5P caller CPU / without, {ERROR_CALL_FORMS[form]}{where}", added["median"], 1.1)
    if "W4" in results:
        bar("W4 swift-log mean / merging no-op mean", ratio(value("W4", "swiftlog", "mean_ns"), value("W4", "noop", "mean_ns")), 1.25)

    if args.hang_watchdog:
        # Not a bar: the watchdog's cost must stay within the run-to-run spread of the same competitor.
        print()
        for workload, field in (("W1", "mean_ns"), ("W1", "p99_ns"), ("W2", "msgs_per_s")):
            if workload not in results:
                continue
            for competitor in ("native", "swiftlog"):
                base = value(workload, competitor, field)
                watched = value(workload, competitor + "+hang", field)
                spread = next(r["range"].get(field) for r in rows if r["workload"] == workload and r["competitor"] == competitor)
                print(f"  hang watchdog on / off, {workload} {competitor} {field}: {ratio(watched, base):.3f}"
                      f"  (off: median {base:,.0f}, runs {spread['min']:,.0f}..{spread['max']:,.0f})")

    if args.journald and "W2" in results:
        # Not a bar: what the journal adds to W2 (every line to the file and to journald), and how many
        # of the 1 M entries the journal kept (it is best effort; the file has every line).
        print()
        for competitor in ("native", "swiftlog"):
            base = value("W2", competitor, "msgs_per_s")
            both = value("W2", competitor + "+journald", "msgs_per_s")
            kept = [s.get("journal_entries") for s in results["W2"][competitor + "+journald"]]
            print(f"  W2 {competitor}: file + journald / file alone, msgs/s {ratio(both, base):.3f}"
                  f"  ({both:,.0f} vs {base:,.0f}); journal entries per run {kept}")

    if "W4" in results:
        # Not bars: where W4's time goes. Building swift-log's metadata dictionaries (the call's and the
        # provider's) is in every swift-log competitor; spdlog formats the same fields into the line.
        for other in ("noop-bare", "spdlog-sync"):
            r = ratio(value("W4", "swiftlog", "mean_ns"), value("W4", other, "mean_ns"))
            if r is not None:
                print(f"  W4 swift-log mean / {other} mean: {r:.3f}")

    print()
    for b in bars:
        state = "n/a" if b["met"] is None else ("met" if b["met"] else "NOT met")
        print(f"  {b['bar']:55} {b['ratio'] if b['ratio'] is not None else '-':>8}  (bar {'>=' if 'msgs/s' in b['bar'] else '<='} {b['limit']})  {state}")

    with open(args.out, "w") as out:
        error_calls = [{"competitor": form, "in_scope": scope, "processes": processes}
                       for (form, scope), processes in error_costs.items()]
        json.dump({"results": rows, "error_calls": error_calls, "bars": bars, "repetitions": args.reps}, out, indent=2)
    print(f"\nwrote {args.out}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
