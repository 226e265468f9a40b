#!/usr/bin/env python3
"""`make bench-crash`: the crash handler's time to a complete raw report with every thread captured.

For 8, 64 and 256 idle threads besides the app's own, the release crash child crashes 20 times
(`blackbox-crash-child DIR threads-N main`). Each raw report says how long the handler took from
entry to the last byte before fsync (`handler-duration-ns`) and how long the other threads took
(`threads-end`); both as p50/max, with the raw and processed report sizes. The peer is the Swift
runtime's backtracer on the same crash (`SWIFT_BACKTRACE=enable=yes`, its "Backtrace took" line),
which suspends every thread too; it runs in separate crashes (it would otherwise run after ours).

A crash-to-exit row: from the handler's entry (the raw report's `time` line) to the parent seeing the
child dead, with the Swift runtime's backtracer enabled as it is by default, once with Blackbox's
default (the backtracer runs only when no report was written) and once with
`BLACKBOX_SWIFT_BACKTRACER=always` (it symbolicates in the dying process), alternating; idle, then
with two busy processes beside it (a loaded machine).

A first-capture row (with --test-child): wall and the caller's CPU of a process's first
`Blackbox.capture(error)` at a call site, p50/max over separate processes.

A thread-start row: what covering new threads costs (each installs its alternate signal stack as it
starts, through Blackbox's pthread_create wrapper): start and join of 2,000 threads one after another,
covered and not (`CRASH_CHILD_COVER_NEW_THREADS=0`), in alternating processes; p50/p99 and the ratio.

With --collector-binary and --helper, a last row measures crash-time delivery: the crash child's
whole life (spawn to death by its signal, 8 idle threads) with the handler starting `blackbox
deliver-crash` against a collector on loopback, beside the same crash without delivery, and checks
that every report arrived (none left in crashes/pending).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request


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


def crash_to_exit(child, chain):
    """Milliseconds from the handler's entry to the parent seeing the child dead."""
    with tempfile.TemporaryDirectory() as directory:
        environment = dict(os.environ, SWIFT_BACKTRACE="enable=yes,interactive=no,color=no",
                           BLACKBOX_SWIFT_BACKTRACER="always" if chain else "when-unreported")
        process = subprocess.Popen([child, directory, "threads-8", "dispatch"], env=environment,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        process.wait(timeout=120)
        died = time.time()
        pending = os.path.join(directory, "crashes", "pending")
        with open(os.path.join(pending, os.listdir(pending)[0]), "rb") as raw:
            for line in raw:
                if line.startswith(b"time "):
                    seconds, nanoseconds = line.split()[1:3]
                    return (died - (int(seconds) + int(nanoseconds) / 1e9)) * 1e3
    raise SystemExit("no time line in the raw report")


def exit_row(child, runs):
    row = {}
    for condition in ("idle", "loaded"):
        burners = []
        if condition == "loaded":
            burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        try:
            skipped, chained = [], []
            for _ in range(runs):
                skipped.append(crash_to_exit(child, False))
                chained.append(crash_to_exit(child, True))
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
        row[condition] = {
            "defaultP50Milliseconds": percentile(skipped, 0.5), "defaultMaxMilliseconds": max(skipped),
            "chainedP50Milliseconds": percentile(chained, 0.5), "chainedMaxMilliseconds": max(chained),
        }
        print(f"crash to exit, {condition} (8 idle threads, a Dispatch worker crashes, {runs} each): default p50 "
              f"{row[condition]['defaultP50Milliseconds']:.1f} ms, max {row[condition]['defaultMaxMilliseconds']:.1f} ms; "
              f"with the Swift backtracer chained p50 {row[condition]['chainedP50Milliseconds']:.0f} ms, "
              f"max {row[condition]['chainedMaxMilliseconds']:.0f} ms")
    return row


def thread_start_row(child, runs):
    """Nanoseconds to start and join a thread, with new threads covered (an alternate stack installed as
    each starts) and without, in alternating processes of 2,000 threads each."""
    samples = {"covered": [], "uncovered": []}
    for _ in range(max(2, runs // 4)):
        for condition in samples:
            with tempfile.TemporaryDirectory() as directory:
                environment = dict(os.environ, SWIFT_BACKTRACE="enable=no",
                                   CRASH_CHILD_COVER_NEW_THREADS="1" if condition == "covered" else "0")
                output = subprocess.run([child, directory, "thread-start-cost", "2000"], env=environment,
                                        capture_output=True, text=True, timeout=300, check=True).stdout
                result = json.loads(output.strip().splitlines()[-1])
                if (result["covered"] >= 2000) != (condition == "covered"):
                    raise SystemExit(f"thread-start-cost ({condition}) covered {result['covered']} threads")
                samples[condition] += [n / 1e3 for n in result["nanoseconds"]]
    row = {}
    for condition, values in samples.items():
        row[condition] = {"p50Microseconds": percentile(values, 0.5), "p99Microseconds": percentile(values, 0.99),
                          "threads": len(values)}
    row["ratioP50"] = row["covered"]["p50Microseconds"] / row["uncovered"]["p50Microseconds"]
    print(f"thread start and join ({row['covered']['threads']} threads each): covered p50 "
          f"{row['covered']['p50Microseconds']:.1f} us, p99 {row['covered']['p99Microseconds']:.1f} us; uncovered p50 "
          f"{row['uncovered']['p50Microseconds']:.1f} us, p99 {row['uncovered']['p99Microseconds']:.1f} us; "
          f"ratio p50 {row['ratioP50']:.2f}")
    return row


def first_capture_row(test_child, runs):
    """Milliseconds (wall, and the calling thread's CPU) of a process's first `Blackbox.capture(error)`
    at a call site: what the request that throws first pays. Its frames are named later, on a thread of
    Blackbox's own (issue 49, item 2: it was 6.36 s of CPU and an 11-23 s response). Cold (a core of the
    app's own) and 300 ms after `Blackbox.start` (as a server's first request finds it)."""
    rows = {}
    for variant, extra in (("cold", []), ("started", ["started"])):
        walls, cpus = [], []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as directory:
                output = subprocess.run([test_child, "first-capture-cost", directory] + extra, capture_output=True,
                                        text=True, timeout=300, check=True).stdout
                match = re.search(r"capture wall ([0-9.e-]+) cpu ([0-9.e-]+)", output)
                if not match:
                    raise SystemExit(f"first-capture-cost printed: {output!r}")
                walls.append(float(match.group(1)) * 1e3)
                cpus.append(float(match.group(2)) * 1e3)
        row = {"wallP50Milliseconds": percentile(walls, 0.5), "wallMaxMilliseconds": max(walls),
               "cpuP50Milliseconds": percentile(cpus, 0.5), "cpuMaxMilliseconds": max(cpus), "runs": runs}
        print(f"first error capture at a call site, {variant} ({runs} processes): wall p50 "
              f"{row['wallP50Milliseconds']:.2f} ms, max {row['wallMaxMilliseconds']:.2f} ms; the caller's CPU p50 "
              f"{row['cpuP50Milliseconds']:.2f} ms, max {row['cpuMaxMilliseconds']:.2f} ms")
        rows[variant] = row
    return rows


def start_collector(binary, data):
    """A collector on a free loopback port; its URL and ingest key, from what `serve` prints."""
    out = open(os.path.join(data, "collector.out"), "w+")
    process = subprocess.Popen([binary, "serve", "--data-dir", os.path.join(data, "collector"), "--port", "0",
                                "--quiet"], stdout=out, stderr=subprocess.STDOUT)
    for _ in range(300):
        out.seek(0)
        text = out.read()
        key = re.search(r"ingest key:\s+(\S+)", text)
        url = re.search(r"listening on\s+(\S+)", text)
        if key and url:
            return process, url.group(1), key.group(1)
        if process.poll() is not None:
            raise SystemExit(f"the collector exited:\n{text}")
        time.sleep(0.1)
    raise SystemExit("the collector did not start")


def crash_lifetime(child, environment):
    with tempfile.TemporaryDirectory() as directory:
        started = time.monotonic()
        subprocess.run([child, directory, "threads-8", "main"], env=environment, capture_output=True, timeout=120)
        elapsed = time.monotonic() - started
        pending = os.path.join(directory, "crashes", "pending")
        left = [name for name in os.listdir(pending) if name.endswith(".raw")]
        return elapsed * 1e3, len(left)


def delivery_row(child, collector_binary, helper, runs):
    with tempfile.TemporaryDirectory() as data:
        process, url, key = start_collector(collector_binary, data)
        try:
            base = dict(os.environ, SWIFT_BACKTRACE="enable=no")
            delivering = dict(base, CRASH_CHILD_DELIVERY_HELPER=helper, CRASH_CHILD_DELIVERY_SERVER=url,
                              CRASH_CHILD_DELIVERY_KEY=key)
            plain, delivered = [], []
            for _ in range(runs):  # alternating, so that drift hits both alike
                plain.append(crash_lifetime(child, base)[0])
                delivered.append(crash_lifetime(child, delivering))
            left = sum(run[1] for run in delivered)
            request = urllib.request.Request(url + "/api/v1/groups")
            with open(os.path.join(data, "collector.out")) as out:
                admin = re.search(r"admin token:\s+(\S+)", out.read())
            if admin:
                request.add_header("Authorization", "Bearer " + admin.group(1))
            with urllib.request.urlopen(request) as answer:
                stored = sum(group["count"] for group in json.load(answer)["items"])
        finally:
            process.terminate()
            process.wait()
    times = [run[0] for run in delivered]
    row = {
        "withoutDeliveryP50Milliseconds": percentile(plain, 0.5), "withoutDeliveryMaxMilliseconds": max(plain),
        "withDeliveryP50Milliseconds": percentile(times, 0.5), "withDeliveryMaxMilliseconds": max(times),
        "reportsLeftPending": left, "reportsStoredByCollector": stored,
    }
    print(f"crash-time delivery (8 idle threads, {runs} crashes each, crash to death): without p50 "
          f"{row['withoutDeliveryP50Milliseconds']:.0f} ms, max {row['withoutDeliveryMaxMilliseconds']:.0f} ms; "
          f"with p50 {row['withDeliveryP50Milliseconds']:.0f} ms, max {row['withDeliveryMaxMilliseconds']:.0f} ms; "
          f"{stored} of {runs} stored by the collector, {left} left pending")
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out")
    parser.add_argument("--collector-binary", help="blackbox-collector, for the crash-time delivery row")
    parser.add_argument("--helper", help="the blackbox CLI, for the crash-time delivery row")
    parser.add_argument("--only-delivery", action="store_true")
    parser.add_argument("--test-child", help="blackbox-test-child, for the first error capture's row")
    arguments = parser.parse_args()
    load = os.getloadavg()[0]
    rows = []
    for threads in () if arguments.only_delivery else (8, 64, 256):
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
    exits = None if arguments.only_delivery else exit_row(arguments.child, arguments.runs)
    thread_starts = None if arguments.only_delivery else thread_start_row(arguments.child, arguments.runs)
    first_capture = None
    if arguments.test_child and not arguments.only_delivery:
        first_capture = first_capture_row(arguments.test_child, arguments.runs)
    delivery = None
    if arguments.collector_binary and arguments.helper:
        delivery = delivery_row(arguments.child, arguments.collector_binary, arguments.helper, arguments.runs)
    print(f"load average at start: {load:.2f} ({os.cpu_count()} CPUs), {arguments.runs} crashes per row")
    if arguments.out:
        with open(arguments.out, "w") as file:
            json.dump({"loadAverage": load, "runs": arguments.runs, "rows": rows, "crashToExit": exits,
                       "threadStarts": thread_starts, "firstCapture": first_capture, "delivery": delivery}, file,
                      indent=2)


if __name__ == "__main__":
    main()
