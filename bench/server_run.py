#!/usr/bin/env python3
"""`make bench-server`: the cost of one logged line per request in a Hummingbird 2 service
(bench/server), with each log backend in turn under wrk, alternated and repeated. For each backend:
requests/s, p99 latency, and CPU per request read from /proc/<pid>/task/*/stat, in total and per
thread group (NIO event loops, Blackbox's writer, ...). Prints a table with medians (min-max) and the
ratios of issue 36's goals, and writes one JSON object per backend.

Usage: server_run.py --server PATH --out FILE [--reps N] [--duration S] [--connections N] [--pace-ms MS]
                     [--candidate PATH]

--candidate: a second build of bench-server (with a library change); its blackbox backend runs as
"candidate" in the same alternation, and the table gains candidate / blackbox: before and after at
equal load in one run, which separate runs on a noisy machine cannot give.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BACKENDS = ["disabled", "noop", "stream", "blackbox", "blackbox-level6"]
TICKS = os.sysconf("SC_CLK_TCK")
LINE = b"order looked up"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def thread_ticks(pid):
    """{tid: (group, utime + stime ticks)}; a thread's group is its name without trailing numbers."""
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        group = re.sub(r"[-#_\d]+$", "", name) or name
        result[tid] = (group, int(fields[11]) + int(fields[12]))
    return result


def cpu_by_group(before, after):
    groups = {}
    for tid, (group, ticks) in after.items():
        groups[group] = groups.get(group, 0) + ticks - before.get(tid, (group, 0))[1]
    return groups


def wrk(port, seconds, connections, threads, pace_script=None):
    paced = ["-s", pace_script] if pace_script else []
    completed = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"] + paced
        + [f"http://127.0.0.1:{port}/orders/17"],
        capture_output=True, text=True, timeout=seconds + 60)
    out = completed.stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()
    p99_ms = float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return requests, rate, p99_ms, int(errors.group(1)) if errors else 0


def logged_lines(backend, directory):
    paths = []
    if backend == "stream":
        paths = [os.path.join(directory, "stream.log")]
    elif backend.startswith("blackbox") or backend == "candidate":
        logs = os.path.join(directory, "logs")
        paths = [os.path.join(logs, n) for n in os.listdir(logs) if n.endswith((".log", ".log.gz"))]
    count = 0
    for path in paths:
        with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
            count += sum(1 for line in f if LINE in line)
    return count


def run_once(args, backend, scratch):
    directory = tempfile.mkdtemp(prefix=f"{backend}-", dir=scratch)
    port = free_port()
    binary, mode = (args.candidate, "blackbox") if backend == "candidate" else (args.server, backend)
    server = subprocess.Popen([binary, mode, directory, str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    sys.exit(f"bench-server {backend} did not start: {server.stderr.read().decode()[-2000:]}")
                time.sleep(0.1)
        wrk(port, 2, args.connections, args.threads, args.pace_script)  # warm-up: connections, caches, the JIT-less steady state
        before = thread_ticks(server.pid)
        requests, rate, p99_ms, errors = wrk(port, args.duration, args.connections, args.threads, args.pace_script)
        groups = cpu_by_group(before, thread_ticks(server.pid))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    lines = logged_lines(backend, directory) if os.path.isdir(directory) else 0
    shutil.rmtree(directory, ignore_errors=True)
    us = lambda ticks: ticks / TICKS * 1e6 / max(requests, 1)
    return {
        "requests_per_s": rate, "p99_ms": p99_ms, "errors": errors,
        "cpu_us_per_request": us(sum(groups.values())),
        "cpu_us_per_request_by_group": {g: round(us(t), 2) for g, t in groups.items() if t > 0},
        # Every request of both wrk runs logged its line (none for the disabled and no-op backends).
        "lines_ok": None if backend in ("disabled", "noop") else lines >= requests,
    }


def fmt(values, digits=1):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pace-ms", type=float, default=0,
                        help="each connection waits this long after an answer (wrk's delay()): every backend then "
                             "serves about the same rate below saturation, so CPU per request compares at equal load")
    parser.add_argument("--candidate", help="a second bench-server build, run as backend 'candidate' (its blackbox)")
    args = parser.parse_args()
    backends = BACKENDS + (["candidate"] if args.candidate else [])
    args.pace_script = None
    if args.pace_ms > 0:
        script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        script.write(f"function delay()\n  return {args.pace_ms}\nend\n")
        script.close()
        args.pace_script = script.name
    scratch = os.path.join(os.path.dirname(os.path.abspath(args.out)), "scratch-server")
    os.makedirs(scratch, exist_ok=True)
    load_before = os.getloadavg()
    runs = {b: [] for b in backends}
    for rep in range(args.reps):
        order = backends if rep % 2 == 0 else list(reversed(backends))
        for backend in order:
            runs[backend].append(run_once(args, backend, scratch))
            print(f"  rep {rep + 1}/{args.reps} {backend}: {runs[backend][-1]['requests_per_s']:.0f} req/s, "
                  f"{runs[backend][-1]['cpu_us_per_request']:.1f} us CPU/request", file=sys.stderr)
    load_after = os.getloadavg()

    print()
    print(f"{'backend':15} {'requests/s':>26} {'p99 ms':>20} {'CPU us/request':>22}  by thread group (median)")
    rows = []
    for backend, samples in runs.items():
        cpu = [s["cpu_us_per_request"] for s in samples]
        groups = sorted({g for s in samples for g in s["cpu_us_per_request_by_group"]})
        by_group = {g: statistics.median([s["cpu_us_per_request_by_group"].get(g, 0) for s in samples]) for g in groups}
        row = {
            "backend": backend, "requests_per_s": statistics.median([s["requests_per_s"] for s in samples]),
            "p99_ms": statistics.median([s["p99_ms"] for s in samples]), "cpu_us_per_request": statistics.median(cpu),
            "cpu_us_per_request_by_group": by_group, "runs": samples,
        }
        rows.append(row)
        shown = ", ".join(f"{g} {v:.1f}" for g, v in sorted(by_group.items(), key=lambda kv: -kv[1]) if v >= 0.1)
        print(f"{backend:15} {fmt([s['requests_per_s'] for s in samples], 0):>26} {fmt([s['p99_ms'] for s in samples], 2):>20} "
              f"{fmt(cpu):>22}  {shown}")
        problems = [s for s in samples if s["errors"] or s["lines_ok"] is False]
        if problems:
            print(f"  {backend}: {len(problems)} run(s) with non-2xx answers or missing log lines", file=sys.stderr)

    cpu = {r["backend"]: r["cpu_us_per_request"] for r in rows}
    # Issue 36's goals. Against the no-op handler, the whole request's CPU; against StreamLogHandler,
    # what the line adds to the disabled line's request (0.6 of the whole would be less than a request
    # without the line costs).
    over = {b: cpu[b] - cpu["disabled"] for b in cpu}
    bars = [
        {"bar": "Blackbox CPU per request / no-op handler's", "ratio": round(cpu["blackbox"] / cpu["noop"], 3), "limit": 1.10},
        {"bar": "Blackbox's CPU over the disabled line / StreamLogHandler's", "ratio": round(over["blackbox"] / over["stream"], 3),
         "limit": 0.6},
        {"bar": "Blackbox (archives at zlib level 6) / no-op handler's", "ratio": round(cpu["blackbox-level6"] / cpu["noop"], 3),
         "limit": 1.10},
    ]
    if args.candidate:
        bars.append({"bar": "candidate build's Blackbox / this build's", "ratio": round(cpu["candidate"] / cpu["blackbox"], 3),
                     "limit": 1.0})
    print()
    for b in bars:
        b["met"] = b["ratio"] <= b["limit"]
        print(f"  {b['bar']:60} {b['ratio']:>7}  (bar <= {b['limit']})  {'met' if b['met'] else 'NOT met'}")
    for backend in [b for b in backends if b not in ("disabled",)]:
        print(f"  {backend}: {over[backend]:+.1f} us CPU per request over the disabled line")
    print(f"\n  load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min); {os.cpu_count()} CPUs")
    with open(args.out, "w") as out:
        json.dump({"results": rows, "bars": bars, "repetitions": args.reps, "duration_s": args.duration,
                   "connections": args.connections, "pace_ms": args.pace_ms, "load_average": {"before": load_before, "after": load_after}},
                  out, indent=2)
    print(f"wrote {args.out}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
