#!/usr/bin/env bash
# The server examples under Examples/ build against this checkout and behave as docs/servers.md says.
# For each (hummingbird-service, vapor-service):
#   - among 40 concurrent requests, the one that crashes leaves a report whose scope names its route
#     pattern, its method and the request id its own log line carries; the process is gone at once;
#   - the framework's level convention (LOG_LEVEL, Vapor's --log) silences info lines through
#     Blackbox's levels.
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

build_example() {  # name; prints the executable
    quietly bash -c "cd '$root/Examples/$1' && '$swift' build -q" >&2
    echo "$(cd "$root/Examples/$1" && "$swift" build --show-bin-path)/$1"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_port() {  # name, port
    for _ in $(seq 1 300); do
        curl -s -o /dev/null "http://127.0.0.1:$2/health" && return 0
        kill -0 "$pid" 2>/dev/null || fail "$1 exited before answering"
        sleep 0.1
    done
    fail "$1 did not answer within 30 s"
}

# name, route pattern, the log metadata key of the request id, command (with PORT and DIR in it)
check_example() {
    local name=$1 route=$2 id_key=$3 command=$4
    local executable
    executable=$(build_example "$name")
    [ -x "$executable" ] || fail "$name did not build"

    echo "examples check: $name, a crashing request among concurrent ones"
    local port
    port=$(free_port)
    local run=${command//PORT/$port}
    run=${run//DIR/$work/$name-crash}
    # Vapor parses the whole command line, so its example takes the directory from the environment.
    SWIFT_BACKTRACE=enable=no VAPOR_SERVICE_DIR="$work/$name-crash" $executable $run \
        >"$work/$name-crash.out" 2>"$work/$name-crash.err" &
    pid=$!
    pids+=("$pid")
    wait_for_port "$name" "$port"
    [ "$(curl -sf "http://127.0.0.1:$port/items/1")" = "80" ] || fail "$name: GET /items/1 did not answer 80"
    for _ in $(seq 1 40); do curl -s -o /dev/null "http://127.0.0.1:$port/items/0" & done
    curl -s -o /dev/null "http://127.0.0.1:$port/items/7" || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$name: the crashed service was still running 10 s later"
    wait
    local raw
    raw=$(ls "$work/$name-crash"/crashes/pending/*.raw 2>/dev/null | head -1)
    [ -n "$raw" ] || fail "$name: no raw crash report"
    "$blackbox" show --json "$raw" >"$work/$name-report.json" || fail "$name: blackbox show failed"
    python3 - "$work/$name-report.json" "$work/$name-crash.out" "$route" "$id_key" <<'PY' ||
import json, sys
report_path, log_path, route, id_key = sys.argv[1:]
report = json.load(open(report_path))
lines = [json.loads(line) for line in open(log_path) if line.startswith("{")]
crashing = [l for l in lines if l.get("msg") == "pricing item" and l.get("meta", {}).get("item") == "7"]
assert len(crashing) == 1, f"log lines of the crashing request: {crashing}"
scope = report.get("scope") or {}
expected = {"route": route, "method": "GET", "request-id": crashing[0]["meta"][id_key]}
assert all(scope.get(k) == v for k, v in expected.items()), f"scope {scope}, expected {expected}"
assert "Index out of range" in (report.get("fatalMessage") or ""), report.get("fatalMessage")
print("examples check: the report names", scope)
PY
        fail "$name: the report's scope is not the crashing request's"
}

# name, command (with a level option or not), environment
check_quiet() {
    local name=$1 command=$2 environment=$3
    echo "examples check: $name at level warning: $environment $command"
    local port
    port=$(free_port)
    local run=${command//PORT/$port}
    run=${run//DIR/$work/$name-quiet}
    env $environment VAPOR_SERVICE_DIR="$work/$name-quiet" "$(build_example "$name")" $run >"$work/$name-quiet.out" 2>"$work/$name-quiet.err" &
    pid=$!
    pids+=("$pid")
    wait_for_port "$name" "$port"
    curl -sf -o /dev/null "http://127.0.0.1:$port/items/2" || fail "$name: GET /items/2 failed"
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    grep -q '"msg":"pricing item"' "$work/$name-quiet.out" && fail "$name: info lines logged at level warning"
    return 0
}

check_example hummingbird-service "/items/{id}" hb.request.id "DIR PORT"
check_quiet hummingbird-service "DIR PORT" LOG_LEVEL=warning
check_example vapor-service "/items/:id" request-id "serve --hostname 127.0.0.1 --port PORT"
check_quiet vapor-service "serve --hostname 127.0.0.1 --port PORT --log warning" SWIFT_BACKTRACE=enable=no
echo "examples check: passed"
