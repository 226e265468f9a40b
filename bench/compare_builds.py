#!/usr/bin/env python3
"""Two builds of blackbox-bench side by side: `bench/compare_builds.py BEFORE AFTER [--reps N]`.

For "no change may make the logging hot path slower": W1 (mean, p99) and W2 (msgs/s) for the native
API and swift-log, each run in a fresh process and directory, the two builds alternating (the order
flips every repetition), medians with min-max, and after/before ratios. `--w5`: issue 52's W5 forms
(a call with `error:`, with a self-describing error, with a private value) instead, each also as a
ratio to the plain call of its own build: across processes (W5), and within one (W5P: the form and
the plain call in alternating blocks, which this VM's swings between processes leave alone).
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
# --w5: issue 52's error call forms, the caller's CPU per call and the mean, each also against the
# plain call of the same build (the bar: less than 1.1x on the caller's thread).
W5_FORMS = ["swiftlog", "swiftlog+error", "swiftlog+describederror", "swiftlog+private"]
W5_CASES = [("W5", form, field) for form in W5_FORMS for field in ("caller_cpu_ns_per_line", "mean_ns")] + [
    ("W5P", form, field) for form in W5_FORMS[1:] for field in ("ratio", "caller_cpu_ns_per_line")]


def run(binary, workload, competitor, env=None):
    directory = tempfile.mkdtemp(prefix=f"compare-{workload}-")
    try:
        out = subprocess.run([binary, workload, competitor, directory], capture_output=True, text=True, timeout=600,
                             env=env)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def error_call_cost(result):
    """One W5P process's caller CPU per call (ns) for the form, the same call without it (`control`:
    the plain call, or for an error the plain call whose caller made the same error) and the plain
    call, and what the form adds over the same call without, over the plain call: `added`, 1 + (form -
    control) / plain, `make bench`'s bar for issue 52."""
    plain = float(result["plain_caller_cpu_ns_per_line"])
    form = float(result["caller_cpu_ns_per_line"])
    control = float(result.get("control_caller_cpu_ns_per_line", plain))
    return {"added": 1 + (form - control) / plain, "plain": plain, "form": form, "control": control}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--w5", action="store_true", help="issue 52's W5 forms instead of W1 and W2")
    args = parser.parse_args()
    cases = W5_CASES if args.w5 else CASES
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    results = {(w, c): {"before": [], "after": []} for w, c, _ in cases}
    for rep in range(args.reps):
        order = [("before", args.before), ("after", args.after)]
        if rep % 2:
            order.reverse()
        for workload, competitor in results:
            for name, binary in order:
                results[(workload, competitor)][name].append(run(binary, workload, competitor))
    for workload, competitor, field in cases:
        runs = results[(workload, competitor)]
        before = [float(r[field]) for r in runs["before"]]
        after = [float(r[field]) for r in runs["after"]]
        # Ratios (W5P) to three places, everything else to whole units.
        places = 3 if max(before + after) < 10 else 0
        print(f"{workload} {competitor:9} {field:11} before {statistics.median(before):>12,.{max(places, 1)}f}"
              f" ({min(before):,.{places}f}..{max(before):,.{places}f})"
              f"  after {statistics.median(after):>12,.{max(places, 1)}f} ({min(after):,.{places}f}..{max(after):,.{places}f})"
              f"  after/before {statistics.median(after) / statistics.median(before):.3f}")
    if args.w5:
        for build in ("before", "after"):
            for form in W5_FORMS[1:]:
                for field in ("caller_cpu_ns_per_line", "mean_ns"):
                    plain = statistics.median(float(r[field]) for r in results[("W5", "swiftlog")][build])
                    this = statistics.median(float(r[field]) for r in results[("W5", form)][build])
                    print(f"{build:6} {form:23} {field:22} / plain call: {this / plain:.3f}")


if __name__ == "__main__":
    main()
