#!/usr/bin/env python3
"""Two builds of blackbox-bench side by side: `bench/compare_builds.py BEFORE AFTER [--reps N]`.

For "no change may make the logging hot path slower": W1 (mean, p99) and W2 (msgs/s) for the native
API and swift-log, each run in a fresh process and directory, the two builds alternating (the order
flips every repetition), medians with min-max, and after/before ratios.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

CASES = [("W1", "native", "mean_ns"), ("W1", "native", "p99_ns"), ("W1", "swiftlog", "mean_ns"),
         ("W1", "swiftlog", "p99_ns"), ("W2", "native", "msgs_per_s"), ("W2", "swiftlog", "msgs_per_s")]


def run(binary, workload, competitor):
    directory = tempfile.mkdtemp(prefix=f"compare-{workload}-")
    try:
        out = subprocess.run([binary, workload, competitor, directory], capture_output=True, text=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    results = {(w, c): {"before": [], "after": []} for w, c, _ in CASES}
    for rep in range(args.reps):
        order = [("before", args.before), ("after", args.after)]
        if rep % 2:
            order.reverse()
        for workload, competitor in results:
            for name, binary in order:
                results[(workload, competitor)][name].append(run(binary, workload, competitor))
    for workload, competitor, field in CASES:
        runs = results[(workload, competitor)]
        before = [r[field] for r in runs["before"]]
        after = [r[field] for r in runs["after"]]
        print(f"{workload} {competitor:9} {field:11} before {statistics.median(before):>12,.1f} ({min(before):,.0f}..{max(before):,.0f})"
              f"  after {statistics.median(after):>12,.1f} ({min(after):,.0f}..{max(after):,.0f})"
              f"  after/before {statistics.median(after) / statistics.median(before):.3f}")


if __name__ == "__main__":
    main()
