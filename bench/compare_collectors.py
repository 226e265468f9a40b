#!/usr/bin/env python3
"""Two collector builds side by side in one run: `make bench-collector BASELINE=<commit>`.

    bench/compare_collectors.py --driver BENCH --current COLLECTOR --baseline COLLECTOR
        [--baseline-name NAME] [--reps N] [--out JSON]

Runs the one benchmark driver (the current build's) against each collector binary, alternating
(the order flips every repetition, so neither build always runs on a machine warmed by the other),
and prints for every row the median of each build with its range and the ratio current/baseline:
absolute figures on this machine drift by 30 % between runs, ratios from one run do not. The rows
are the driver's (`BENCH_ROWS` passes through). Each run's disk baseline (dd, bare durable writes)
is printed too, so a run on a disturbed disk shows itself.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

# (field, label, which way is better)
FIELDS = [("uploadsPerSecond", "uploads/s", "higher"), ("p50Milliseconds", "p50 ms", "lower"),
          ("p99Milliseconds", "p99 ms", "lower"), ("collectorPeakRSSMiB", "peak RSS MiB", "lower")]


def run_driver(driver, collector, work):
    # Every run keeps its files until the comparison ends: a run that deleted its tens of thousands
    # of files made the next run's file creations slow for minutes on an ext4 without a journal
    # (docs/collector.md), so the build that ran second paid for the first one's cleanup.
    environment = dict(os.environ, BENCH_DIR=work, BENCH_KEEP="1")
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        completed = subprocess.run([driver, collector, out.name], capture_output=True, text=True, timeout=3600,
                                   env=environment)
        if completed.returncode != 0:
            raise SystemExit(f"{driver} {collector} failed ({completed.returncode}):\n"
                             f"{completed.stdout[-4000:]}\n{completed.stderr[-4000:]}")
        with open(out.name) as f:
            return json.load(f)


def spread(values):
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}..{max(values):,.1f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", required=True)
    parser.add_argument("--current", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--baseline-name", default="baseline")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"rows: {os.environ.get('BENCH_ROWS', 'default')}; {args.reps} runs of each build, alternating")

    runs = {"current": [], "baseline": []}
    work = tempfile.mkdtemp(prefix="compare-collectors-", dir=os.environ.get("BENCH_DIR", os.getcwd()))
    try:
        compare(args, runs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compare(args, runs, work):
    for rep in range(args.reps):
        order = [("current", args.current), ("baseline", args.baseline)]
        if rep % 2:
            order.reverse()
        for name, binary in order:
            result = run_driver(args.driver, binary, work)
            runs[name].append(result)
            print(f"run {rep + 1} {name:8}: load {os.getloadavg()[0]:.2f}, dd {result['ddMegabytesPerSecond']:,.0f} MB/s, "
                  f"bare durable writes {result['bareDurableWritesPerSecond']:,.0f}/s", flush=True)

    rows = [m["name"] for m in runs["current"][0]["measurements"]]
    table = []
    print(f"\ncurrent = {args.current}\nbaseline = {args.baseline_name} ({args.baseline})\n")
    print("| row | figure | current | baseline | current/baseline |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        for field, label, better in FIELDS:
            values = {}
            for name in runs:
                values[name] = [m[field] for run in runs[name] for m in run["measurements"] if m["name"] == row]
            if not values["current"] or not values["baseline"]:
                continue
            # A row the baseline cannot serve (an endpoint it predates) has no ratio.
            served = [m["uploadsPerSecond"] for run in runs["baseline"] for m in run["measurements"] if m["name"] == row]
            if not any(served):
                if field == "uploadsPerSecond":
                    print(f"| {row} | {label} | {spread(values['current'])} | not served | - |")
                continue
            ratio = statistics.median(values["current"]) / max(statistics.median(values["baseline"]), 1e-9)
            errors = sum(m["errors"] for run in runs["current"] for m in run["measurements"] if m["name"] == row)
            note = f" ({errors} errors)" if errors and field == "uploadsPerSecond" else ""
            print(f"| {row} | {label} ({better} is better) | {spread(values['current'])}{note} "
                  f"| {spread(values['baseline'])} | {ratio:.3f} |")
            table.append({"row": row, "field": field, "current": values["current"],
                          "baseline": values["baseline"], "ratio": ratio})
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"baseline": args.baseline_name, "reps": args.reps, "rows": table, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
