#!/usr/bin/env bash
# The examples under Examples/ build and behave as docs/servers.md says, against this checkout:
#   hummingbird-service: under concurrent requests, a request that crashes leaves a report whose scope
#   names its route pattern, method and the request id its own log line carries; the process is gone
#   within seconds; LOG_LEVEL=warning silences info lines through Blackbox's levels.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "examples check: $*" >&2
    for file in "$work"/*.out "$work"/*.err; do [ -f "$file" ] && { echo "--- $file" >&2; tail -20 "$file" >&2; }; done
    exit 1
}

quietly() {  # a build, without the package manager's resolution chatter (errors still show)
    "$@" 2>&1 | grep -vE '^(Updat|Comput|Fetch|Creat|Working copy|Remov)|unhandled' || true
}
quietly bash -c "cd '$root' && '$swift' build --traits Tools --product blackbox -q"
blackbox="$(cd "$root" && "$swift" build --show-bin-path)/blackbox"
[ -x "$blackbox" ] || fail "the blackbox CLI did not build"
service_dir="$root/Examples/hummingbird-service"
quietly bash -c "cd '$service_dir' && '$swift' build -q"
service="$(cd "$service_dir" && "$swift" build --show-bin-path)/hummingbird-service"
[ -x "$service" ] || fail "hummingbird-service did not build"

start() {  # name, then environment assignments; sets $pid and $port
    local name=$1
    shift
    env "$@" "$service" "$work/$name" 0 >"$work/$name.out" 2>"$work/$name.err" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 300); do
        port=$(grep -o 'listening on [0-9]*' "$work/$name.err" 2>/dev/null | awk '{print $3}' || true)
        [ -n "$port" ] && return 0
        kill -0 "$pid" 2>/dev/null || fail "$name exited before listening"
        sleep 0.1
    done
    fail "$name did not listen within 30 s"
}

echo "examples check: hummingbird-service, a crashing request among concurrent ones"
start crash SWIFT_BACKTRACE=enable=no
[ "$(curl -sf "http://127.0.0.1:$port/items/1")" = "80" ] || fail "GET /items/1 did not answer 80"
for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/items/0" & done
curl -s -o /dev/null "http://127.0.0.1:$port/items/7" || true
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the crashed service was still running 10 s later"
wait
raw=$(ls "$work"/crash/crashes/pending/*.raw 2>/dev/null | head -1)
[ -n "$raw" ] || fail "no raw crash report"
"$blackbox" show --json "$raw" >"$work/report.json" || fail "blackbox show failed"
python3 - "$work/report.json" "$work/crash.out" <<'PY' || fail "the report's scope is not the crashing request's"
import json, sys
report = json.load(open(sys.argv[1]))
lines = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")]
crashing = [l for l in lines if l.get("msg") == "pricing item" and l.get("meta", {}).get("item") == "7"]
assert len(crashing) == 1, f"log lines of the crashing request: {crashing}"
scope = report.get("scope") or {}
expected = {"route": "/items/{id}", "method": "GET", "request-id": crashing[0]["meta"]["hb.request.id"]}
assert all(scope.get(k) == v for k, v in expected.items()), f"scope {scope}, expected {expected}"
assert "Index out of range" in (report.get("fatalMessage") or ""), report.get("fatalMessage")
print("examples check: the report names", scope)
PY

echo "examples check: hummingbird-service, LOG_LEVEL=warning"
start quiet LOG_LEVEL=warning
curl -sf -o /dev/null "http://127.0.0.1:$port/items/2" || fail "GET /items/2 failed"
curl -sf -o /dev/null "http://127.0.0.1:$port/health" || fail "GET /health failed"
kill -TERM "$pid"
wait "$pid" 2>/dev/null || true
grep -q '"msg":"pricing item"' "$work/quiet.out" && fail "LOG_LEVEL=warning still logged info lines"
echo "examples check: passed"
