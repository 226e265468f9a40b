#!/usr/bin/env python3
"""Issue 52's bar for one build: `bench/error_call_ratios.py BINARY [--reps N] [--scope]`.

A swift-log call with `error:` (an error printed by reflection, one describing itself) and with a
private value, each against the same call without, on the caller's thread. Each form runs in W5P
(the writer working beside the caller) and W5Q (the writer held during each block: the calls' own
cost), N processes each, the forms taking turns. Prints, per form and workload, the median and
range over processes of the ratio to the plain call and, for the error forms, to the plain call
whose caller made the same error (`control`: making an error is the app's, logged or not), and what
the form adds over the same call without, over the plain call (`added`: `make bench`'s bar).
`--scope` runs the calls inside a request's scope (BLACKBOX_BENCH_SCOPE=1).
"""

import argparse
import os
import statistics

from compare_builds import error_call_cost, run

FORMS = ["swiftlog+error", "swiftlog+describederror", "swiftlog+private"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--scope", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.scope:
        env["BLACKBOX_BENCH_SCOPE"] = "1"
    print(f"load average at start: {os.getloadavg()[0]:.2f}; scope: {args.scope}")
    results = {(w, f): [] for w in ("W5P", "W5Q") for f in FORMS}
    for rep in range(args.reps):
        keys = list(results) if rep % 2 == 0 else list(reversed(results))
        for workload, form in keys:
            results[(workload, form)].append(run(args.binary, workload, form, env))
    for (workload, form), runs in results.items():
        for field in ("ratio", "control_ratio"):
            values = sorted(float(r[field]) for r in runs if field in r)
            if not values:
                continue
            print(f"{workload} {form:24} {field:13} median {statistics.median(values):.3f} "
                  f"({values[0]:.3f}..{values[-1]:.3f})")
        added = sorted(error_call_cost(r)["added"] for r in runs)
        print(f"{workload} {form:24} {'added':13} median {statistics.median(added):.3f} ({added[0]:.3f}..{added[-1]:.3f})")
        cpu = statistics.median(float(r["caller_cpu_ns_per_line"]) for r in runs)
        plain = statistics.median(float(r["plain_caller_cpu_ns_per_line"]) for r in runs)
        print(f"{workload} {form:24} caller CPU a call: form {cpu:.0f} ns, plain {plain:.0f} ns")


if __name__ == "__main__":
    main()
