#!/usr/bin/env python3
"""`make bench-crash`: the crash handler's time to a complete raw report with every thread captured.

For 8, 64 and 256 idle threads besides the app's own, the release crash child crashes 20 times
(`blackbox-crash-child DIR threads-N main`). Each raw report says how long the handler took from
entry to the last byte before fsync (`handler-duration-ns`) and how long the other threads took
(`threads-end`); both as p50/max, with the raw and processed report sizes. The peer is the Swift
runtime's backtracer on the same crash (`SWIFT_BACKTRACE=enable=yes`, its "Backtrace took" line),
which suspends every thread too; it runs in separate crashes (it would otherwise run after ours).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def raw_fields(path):
    fields = {}
    with open(path, "rb") as raw:
        for line in raw:
            for key in (b"handler-duration-ns ", b"threads-end "):
                if line.startswith(key):
                    fields[key.decode().strip()] = int(line[len(key):].split()[0])
    return fields


def crash_once(child, threads, swift_backtracer):
    with tempfile.TemporaryDirectory() as directory:
        environment = dict(os.environ)
        environment["SWIFT_BACKTRACE"] = (
            "enable=yes,interactive=no,color=no,threads=all,symbolicate=off" if swift_backtracer else "enable=no")
        result = subprocess.run(
            [child, directory, f"threads-{threads}", "main"], env=environment, capture_output=True, timeout=120)
        if swift_backtracer:
            match = re.search(rb"Backtrace took ([0-9.]+)s", result.stderr + result.stdout)
            return {"swift-backtracer-s": float(match.group(1))} if match else {}
        pending = os.path.join(directory, "crashes", "pending")
        names = os.listdir(pending)
        if len(names) != 1:
            raise SystemExit(f"threads-{threads}: {len(names)} raw reports")
        raw = os.path.join(pending, names[0])
        fields = raw_fields(raw)
        fields["raw-bytes"] = os.path.getsize(raw)
        processed = subprocess.run(
            [child, directory, "process-pending", "next"], capture_output=True, text=True, timeout=120)
        report = processed.stdout.strip().splitlines()[0]
        fields["json-bytes"] = os.path.getsize(report)
        with open(report) as file:
            fields["threads"] = len(json.load(file).get("threads") or [])
        return fields


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out")
    arguments = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    for threads in (8, 64, 256):
        ours = [crash_once(arguments.child, threads, False) for _ in range(arguments.runs)]
        peer = [crash_once(arguments.child, threads, True) for _ in range(arguments.runs)]
        handler = [run["handler-duration-ns"] / 1e6 for run in ours]
        capture = [run["threads-end"] / 1e6 for run in ours]
        swift = [run["swift-backtracer-s"] * 1e3 for run in peer if run]
        row = {
            "idleThreads": threads,
            "threadsInReport": statistics.median(run["threads"] for run in ours),
            "handlerP50Milliseconds": percentile(handler, 0.5),
            "handlerMaxMilliseconds": max(handler),
            "threadCaptureP50Milliseconds": percentile(capture, 0.5),
            "threadCaptureMaxMilliseconds": max(capture),
            "rawBytesMedian": statistics.median(run["raw-bytes"] for run in ours),
            "jsonBytesMedian": statistics.median(run["json-bytes"] for run in ours),
            "swiftBacktracerP50Milliseconds": percentile(swift, 0.5) if swift else None,
            "swiftBacktracerMaxMilliseconds": max(swift) if swift else None,
        }
        rows.append(row)
        peer_text = (
            f"Swift backtracer (unsymbolicated) p50 {row['swiftBacktracerP50Milliseconds']:.1f} ms, "
            f"max {row['swiftBacktracerMaxMilliseconds']:.1f} ms; ratio p50 "
            f"{row['handlerP50Milliseconds'] / row['swiftBacktracerP50Milliseconds']:.3f}"
            if swift else "Swift backtracer: no timing printed")
        print(
            f"{threads} idle threads ({row['threadsInReport']:.0f} in the report): handler p50 "
            f"{row['handlerP50Milliseconds']:.1f} ms, max {row['handlerMaxMilliseconds']:.1f} ms "
            f"(threads p50 {row['threadCaptureP50Milliseconds']:.1f} ms); raw {row['rawBytesMedian'] / 1024:.0f} KiB, "
            f"JSON {row['jsonBytesMedian'] / 1024:.0f} KiB; {peer_text}")
    print(f"load average at start: {load:.2f} ({os.cpu_count()} CPUs), {arguments.runs} crashes per row")
    if arguments.out:
        with open(arguments.out, "w") as file:
            json.dump({"loadAverage": load, "runs": arguments.runs, "rows": rows}, file, indent=2)


if __name__ == "__main__":
    main()
