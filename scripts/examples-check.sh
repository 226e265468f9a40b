#!/usr/bin/env bash
# The server examples under Examples/ build against this checkout and behave as docs/servers.md says.
# For each (hummingbird-service, vapor-service):
#   - among 40 concurrent requests, the one that crashes leaves a report whose scope names its route
#     pattern, its method and the request id its own log line carries; the process is gone at once;
#   - a handler that throws answers 500 and leaves an error report with its scope; a 4xx leaves none;
#   - hummingbird-service, 12 times: a crash while 63 slow requests are in flight names the crashing
#     request; in a crash loop on one port, every start binds, every crash is reported once, and every
#     crashed run counts the request it cut short beside the probe it answered (request health);
#   - the framework's level convention (LOG_LEVEL, Vapor's --log) silences info lines through
#     Blackbox's levels.
#   - hummingbird-service traces with swift-otel (TRACING=1): the crashing request's scope carries the
#     trace and span ids of its own log line.
# Then a Hummingbird crash goes where a user would look at it, from the binary users ship: a release
# build, its debug info split off and stripped (docs/symbols.md's recipe). The service started again
# processes the crash, `blackbox symbols upload` sends the debug file and `blackbox upload` the crash to a
# collector, which symbolicates it; headless Chromium opens its report page (the headline, the scope,
# the app's frame by its short name, no "missing debug files" for the app's binary). The traced crash,
# uploaded as a dead app's directory (`blackbox upload` processes it), is found with the request's log
# line by the collector's trace view. Then the traced service exports its log lines with swift-otel's
# OTLP/HTTP exporter to the same collector's /v1/logs, beside Blackbox's handler (a MultiplexLogHandler):
# under 16 concurrent clients, each request's line is once in Blackbox's output and once at the collector,
# found by its own trace id.
# The Hummingbird checks run on its release build (the one users ship), built without the Tracing trait
# (swift-otel would be most of that build); the traced one and the Vapor ones on debug builds.
# EXAMPLES_SCREENSHOTS=DIR keeps the page's screenshots.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}
# The build folders the root package and the collector use (Makefile: SCRATCH, RELEASE_SCRATCH), with
# the Makefile's flags, so the examples compile no dependency those builds compiled already.
scratch=${SCRATCH:-$root/.build}
release_scratch=${RELEASE_SCRATCH:-$root/.build-release}
build_flags=(--scratch-path "$scratch")
release_flags=(--scratch-path "$release_scratch" -c release)
# Deterministic hashing for the package manager only: it orders trait flags by a Set (Makefile).
swift_build=(env SWIFT_DETERMINISTIC_HASHING=1 "$swift" build)
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

# The builds first, each once: debug builds of both examples, and the Hummingbird example in release
# without tracing (the build users ship), in the build folders of `make test`. The CLI and the collector
# are used as built there (`make build-tools`).
# EXAMPLES_SKIP_BUILD=1: use what is built. EXAMPLES_BUILD_ONLY=debug|release: build those, then stop.
build() {  # package directory, then swift build arguments
    local package=$1
    shift
    quietly "${swift_build[@]}" --package-path "$package" -q "$@"
}
if [ "${EXAMPLES_SKIP_BUILD:-0}" != 1 ]; then
    if [ "${EXAMPLES_BUILD_ONLY:-debug}" = debug ]; then
        # Hummingbird's first: the collector, built just before in the same folder, has Hummingbird in its
        # graph too. A build forgets the state of modules outside its own graph, so after Vapor's,
        # Hummingbird and its packages were compiled again.
        build "$root/Examples/hummingbird-service" "${build_flags[@]}"
        build "$root/Examples/vapor-service" "${build_flags[@]}"
    fi
    if [ "${EXAMPLES_BUILD_ONLY:-release}" = release ]; then
        build "$root/Examples/hummingbird-service" "${release_flags[@]}" --disable-default-traits
    fi
fi
[ -n "${EXAMPLES_BUILD_ONLY:-}" ] && exit 0
collector="$scratch/debug/blackbox-collector"
blackbox="$scratch/debug/blackbox"
for built in "$collector" "$blackbox" "$release_scratch/release/hummingbird-service" \
    "$scratch/debug/hummingbird-service" "$scratch/debug/vapor-service"; do
    [ -x "$built" ] || fail "$built was not built"
done

example() {  # name, build (release or debug); prints the executable
    case $2 in
        release) echo "$release_scratch/release/$1" ;;
        *) echo "$scratch/debug/$1" ;;
    esac
}

# name; prints the executable as users ship it (docs/symbols.md, "The release recipe"): the release
# build with its debug info split off into $work/symbols/NAME.debug and stripped from the binary.
shipped_example() {
    mkdir -p "$work/shipped" "$work/symbols"
    cp "$(example "$1" release)" "$work/shipped/$1"
    objcopy --only-keep-debug "$work/shipped/$1" "$work/symbols/$1.debug" >&2
    objcopy --strip-debug --add-gnu-debuglink="$work/symbols/$1.debug" "$work/shipped/$1" >&2
    echo "$work/shipped/$1"
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
# name, executable, command (PORT and DIR stand for the port and the directory), directory, environment;
# starts the example in the background and waits for its port. Sets $pid and $port; its output goes to
# DIRECTORY.out and DIRECTORY.err.
start_service() {
    local name=$1 executable=$2 command=$3 directory=$4 environment=${5:-}
    port=${fixed_port:-$(free_port)}
    local run=${command//PORT/$port}
    run=${run//DIR/$directory}
    # Vapor parses the whole command line, so its example takes the directory from the environment.
    # shellcheck disable=SC2086 # the command and the environment are lists of words
    env SWIFT_BACKTRACE=enable=no $environment VAPOR_SERVICE_DIR="$directory" "$executable" $run \
        >"$directory.out" 2>"$directory.err" &
    pid=$!
    pids+=("$pid")
    wait_for_port "$name" "$port"
}

# report JSON, the service's log, route pattern, request-id key, traced (yes/no): the report's scope is
# the request for item 7, the one that crashed, as its own log line names it (and its trace, when
# traced).
check_scope() {
    python3 - "$@" <<'PY'
import json, sys
report_path, log_path, route, id_key, traced = sys.argv[1:]
scope = json.load(open(report_path)).get("scope") or {}
lines = [json.loads(line) for line in open(log_path) if line.startswith("{")]
crashing = [l for l in lines if l.get("msg") == "pricing item" and l.get("meta", {}).get("item") == "7"]
assert len(crashing) == 1, f"log lines of the crashing request: {crashing}"
line = crashing[0]
expected = {"route": route, "method": "GET", "request-id": line["meta"][id_key]}
if traced == "yes":
    # JSON Lines keeps the trace context at the top level, under OpenTelemetry's names.
    assert len(line.get("trace_id", "")) == 32, f"no trace id in the request's log line: {line}"
    expected.update({"trace-id": line["trace_id"], "span-id": line["span_id"]})
assert all(scope.get(k) == v for k, v in expected.items()), f"scope {scope}, expected {expected}"
PY
}

# name, build (debug or release), route pattern, request id key, command, environment
check_example() {
    local name=$1 build=$2 route=$3 id_key=$4 command=$5 environment=${6:-}
    local traced=no
    [[ $environment == *TRACING=1* ]] && traced=yes
    local executable
    executable=$(example "$name" "$build")
    [ -x "$executable" ] || fail "$name did not build"

    echo "examples check: $name ($build), a crashing request among concurrent ones $environment"
    start_service "$name" "$executable" "$command" "$work/$name-crash" "$environment"
    [ "$(curl -sf "http://127.0.0.1:$port/items/1")" = "80" ] || fail "$name: GET /items/1 did not answer 80"
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/pay")" = "500" ] ||
        fail "$name: GET /pay did not answer 500"
    # A client error (a 4xx) is not reported: the one error report below is /pay's.
    local bad
    bad=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/items/abc")
    [[ $bad == 4* ]] || fail "$name: GET /items/abc answered $bad, not a 4xx"
    local requests=()
    for _ in $(seq 1 40); do
        curl -s -o /dev/null "http://127.0.0.1:$port/items/0" &
        requests+=($!)
    done
    curl -s -o /dev/null "http://127.0.0.1:$port/items/7" || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$name: the crashed service was still running 10 s later"
    wait "${requests[@]}" 2>/dev/null || true
    local raw
    raw=$(ls "$work/$name-crash"/crashes/pending/*.raw 2>/dev/null | head -1)
    [ -n "$raw" ] || fail "$name: no raw crash report"
    "$blackbox" show --json "$raw" >"$work/$name-report.json" || fail "$name: blackbox show failed"
    check_scope "$work/$name-report.json" "$work/$name-crash.out" "$route" "$id_key" "$traced" ||
        fail "$name: the report's scope is not the crashing request's"
    grep -q "Index out of range" "$work/$name-report.json" || fail "$name: the report lacks the fatal message"
    python3 - "$work/$name-crash/outbox" "$route" "$name" <<'PY' || fail "$name: no error report for the thrown error"
import glob, json, sys
outbox, route, name = sys.argv[1:]
# The service crashes right after: its report may still wait for its frames' names
# (error-<id>.json.unnamed-<pid>, named by the next start); it is written either way.
reports = [json.load(open(path)) for path in glob.glob(outbox + "/error-*.json*")]
assert len(reports) == 1, f"{len(reports)} error reports (the 4xx must not be one)"
report = reports[0]
assert report["metadata"]["error.type"].endswith("PaymentError"), report["metadata"]
assert report.get("scope", {}).get("route") == route.split("/items")[0] + "/pay", report.get("scope")
# The Hummingbird example marks its throw (Blackbox.thrown); the Vapor one does not: its group is the route.
site = {key: value for key, value in report["metadata"].items() if key.startswith("error.site.")}
if name == "hummingbird-service":
    assert site.get("error.site.from") == "thrown", site
    assert site.get("error.site.file", "").endswith("/main.swift") and int(site["error.site.line"]) > 0, site
else:
    assert not site, site
print("examples check: the thrown error was reported:", report["reason"], report["scope"])
PY
}

# name, build, route pattern, request id key, command, rounds: a crash while 63 slow requests are in
# flight (each suspended in its own scope on the same threads, all entered after the crashing
# request's), again and again; each report must name the crashing request.
check_repeated_crashes() {
    local name=$1 build=$2 route=$3 id_key=$4 command=$5 rounds=$6
    echo "examples check: $name ($build), $rounds crashes, each among 63 requests in flight"
    local executable
    executable=$(example "$name" "$build")
    for round in $(seq 1 "$rounds"); do
        local directory="$work/$name-round-$round"
        start_service "$name" "$executable" "$command" "$directory"
        # The crashing request enters its scope first and waits; the 63 others enter theirs meanwhile,
        # so a scope that was merely the last one entered would name one of them.
        curl -s -o /dev/null "http://127.0.0.1:$port/items/7?after=400" &
        local requests=($!)
        sleep 0.05
        for _ in $(seq 1 63); do
            curl -s -o /dev/null "http://127.0.0.1:$port/slow" &
            requests+=($!)
        done
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && fail "$name round $round: still running 10 s after the crash"
        wait "${requests[@]}" 2>/dev/null || true
        "$blackbox" show --json "$directory"/crashes/pending/*.raw >"$directory.json" 2>/dev/null ||
            fail "$name round $round: no readable crash report"
        check_scope "$directory.json" "$directory.out" "$route" "$id_key" no || fail "$name round $round: wrong scope"
    done
    echo "examples check: $name named the crashing request in $rounds of $rounds rounds"
}

# A crash loop, as a supervisor's `Restart=always` makes one: the Hummingbird service (release) is
# started again at once on the same port after each crash, with the earlier crashes' raw reports
# pending (each start processes them in the background, llvm-symbolizer children included, and dies
# before it is done). Every start must bind the port (a child holding the listening socket made the next
# start die with EADDRINUSE, itself reported as an error); a last start that lives reports every crash
# once.
check_crash_loop() {
    local name=hummingbird-service rounds=6
    echo "examples check: $name (release), a crash loop of $rounds starts on one port"
    local directory="$work/$name-loop" executable
    executable=$(example "$name" release)
    local fixed_port
    fixed_port=$(free_port)
    for round in $(seq 1 "$rounds"); do
        start_service "$name" "$executable" "DIR PORT" "$directory"
        curl -s -o /dev/null "http://127.0.0.1:$port/items/7" || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && fail "$name crash loop, round $round: still running 10 s after the crash"
        if grep -q "Address already in use" "$directory.err"; then fail "$name crash loop, round $round: the port was held"; fi
    done
    count() { local n=0 file; for file in "$@"; do [ -e "$file" ] && n=$((n + 1)); done; echo "$n"; }
    start_service "$name" "$executable" "DIR PORT" "$directory"
    for _ in $(seq 1 300); do
        [ "$(count "$directory"/outbox/crash-*.json)" -ge "$rounds" ] && break
        sleep 0.1
    done
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    local processed pending
    processed=$(count "$directory"/outbox/crash-*.json)
    pending=$(count "$directory"/crashes/pending/*.raw)
    [ "$processed" -eq "$rounds" ] && [ "$pending" -eq 0 ] ||
        fail "$name crash loop: $processed processed crash reports and $pending raw ones for $rounds crashes"
    if grep -l "bind" "$directory"/outbox/*.json 2>/dev/null | grep -q .; then
        fail "$name crash loop: a report of a failed bind"
    fi
    # Request health: each crashed run served the readiness probe's GET /health and the request the
    # crash cut short (counted by the middleware in the run's mapped counters, added to its session by
    # the next start).
    python3 - "$directory/runs/ended" "$rounds" <<'PY' || fail "$name crash loop: the runs' request counts"
import json, os, sys
folder, rounds = sys.argv[1], int(sys.argv[2])
sessions = [json.load(open(os.path.join(folder, n))) for n in sorted(os.listdir(folder)) if n.endswith(".json")]
crashed = [s for s in sessions if s["outcome"] == "crashed"]
assert len(crashed) == rounds, f"{len(crashed)} crashed runs counted: {sessions}"
for session in crashed:
    requests = session.get("requests") or {}
    assert requests.get("crashed") == 1 and requests.get("serverErrors") == 0, f"a crashed run: {session}"
    assert requests.get("total", 0) >= 2, f"the probe and the crashing request: {session}"
PY
    echo "examples check: $name bound its port at each of $((rounds + 1)) starts; each of $rounds crashes reported once, with the request it cut short"
}

# name, build, command (with a level option or not), environment
check_quiet() {
    local name=$1 build=$2 command=$3 environment=$4
    echo "examples check: $name ($build) at level warning: $environment $command"
    start_service "$name" "$(example "$name" "$build")" "$command" "$work/$name-quiet" "$environment"
    curl -sf -o /dev/null "http://127.0.0.1:$port/items/2" || fail "$name: GET /items/2 failed"
    kill -TERM "$pid"
    # SIGTERM ends the service and Blackbox with it (a supervisor's restart should not wait).
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$name: still running 10 s after SIGTERM"
    wait "$pid" 2>/dev/null || true
    grep -q '"msg":"pricing item"' "$work/$name-quiet.out" && fail "$name: info lines logged at level warning"
    return 0
}

# A crash of the shipped (release, stripped) Hummingbird service, symbolicated by the collector from the
# uploaded debug file and shown in Chromium; then the traced crash check_example left (a dead app's
# directory) is found by its trace id.
check_report_page() {
    local name=hummingbird-service
    echo "examples check: $name, shipped as a stripped release binary, its crash on the collector's report page"
    local chromium
    chromium=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$chromium" ] || fail "chromium is not installed"
    local shipped
    shipped=$(shipped_example "$name")
    [ -x "$shipped" ] || fail "$name did not build in release"
    readelf -S "$shipped" | grep -q debug_info && fail "$name: the shipped binary still has debug info"

    local directory="$work/$name-shipped"
    start_service "$name" "$shipped" "DIR PORT" "$directory"
    curl -sf -o /dev/null "http://127.0.0.1:$port/items/1" || fail "$name (release): GET /items/1 failed"
    curl -s -o /dev/null "http://127.0.0.1:$port/items/7" || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$name (release): still running 10 s after the crash"

    # The service started again processes the raw report into its outbox, as an app's start does.
    start_service "$name" "$shipped" "DIR PORT" "$directory"
    for _ in $(seq 1 100); do
        ls "$directory"/outbox/crash-*.json >/dev/null 2>&1 && break
        sleep 0.1
    done
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null || true
    ls "$directory"/outbox/crash-*.json >/dev/null 2>&1 || fail "$name: the restart processed no crash"

    "$collector" serve --data-dir "$work/collector" --port 0 --quiet >"$work/collector.out" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 300); do
        grep -q "read the API" "$work/collector.out" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || fail "the collector exited"
        sleep 0.1
    done
    local key admin url
    key=$(awk '/ingest key:/ {print $3}' "$work/collector.out")
    admin=$(awk '/admin token:/ {print $3}' "$work/collector.out")
    url=$(awk '/listening on/ {print $NF; exit}' "$work/collector.out")
    "$blackbox" symbols upload --server "$url" --token "$admin" --quiet "$work/symbols/$name.debug" ||
        fail "blackbox symbols upload failed"
    "$blackbox" upload "$directory" --server "$url" --key "$key" --quiet || fail "blackbox upload failed"
    # The collector names the stripped binary's frames from the debug file, in the background.
    local report=""
    for _ in $(seq 1 300); do
        report=$(curl -sf -H "Authorization: Bearer $admin" "$url/api/v1/groups" | python3 -c '
import json, sys
crashes = [g for g in json.load(sys.stdin)["items"] if g["kind"] == "crash" and g["title"].startswith("Index out of range")]
print(crashes[0]["latestReportID"] if crashes else "")')
        [ -n "$report" ] && break
        sleep 0.1
    done
    [ -n "$report" ] || fail "no symbolicated crash group on the collector: $(curl -s -H "Authorization: Bearer $admin" "$url/api/v1/groups")"

    # The traced crash (the debug build's, check_example's directory), from the request's log line to the
    # collector's trace view.
    local traced="$work/$name-crash" trace_id
    trace_id=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        entry = json.loads(line)
        if entry.get("msg") == "pricing item" and entry["meta"].get("item") == "7": print(entry["trace_id"])
' "$traced.out")
    [ ${#trace_id} -eq 32 ] || fail "$name: no trace id in the traced crashing request's log line"
    "$blackbox" upload "$traced" --server "$url" --key "$key" --quiet || fail "blackbox upload of the traced crash failed"
    # Log lines are searchable once the collector's background indexer has read the bundle.
    local found=no
    for _ in $(seq 1 300); do
        curl -sf -H "Authorization: Bearer $admin" "$url/api/v1/traces/$trace_id" >"$work/trace.json" || true
        python3 - "$work/trace.json" "$report" <<'PY' && { found=yes; break; }
import json, sys
trace = json.load(open(sys.argv[1]))
crashes = [r for r in trace["reports"] if r["kind"] == "crash"]
assert crashes and crashes[0]["reportID"] != int(sys.argv[2]), trace["reports"]
assert any("pricing item" in line["text"] for line in trace["logLines"]), trace["logLines"]
print("examples check: the trace view has the traced crash and", len(trace["logLines"]), "log line(s) of its request")
PY
        sleep 0.1
    done 2>/dev/null
    [ $found = yes ] || fail "the collector's trace view lacks the crash or its request's log line: $(cat "$work/trace.json")"
    # The same upload's error report (GET /pay, captured by the middleware) is grouped and titled by the
    # line that marked its throw, not by the middleware or the route.
    curl -sf -H "Authorization: Bearer $admin" "$url/api/v1/groups" | python3 -c '
import json, re, sys
errors = [g["title"] for g in json.load(sys.stdin)["items"] if g["kind"] == "error"]
assert len(errors) == 1 and re.fullmatch(r"hummingbird_service\.PaymentError at hummingbird_service/main\.swift:\d+", errors[0]), errors
print("examples check: the error group is titled", repr(errors[0]))' || fail "$name: the error group is not titled by its throw site"
    local link
    link=$(curl -sf -X POST -H "Authorization: Bearer $admin" "$url/api/v1/login-links" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["path"])')
    local shots=${EXAMPLES_SCREENSHOTS:-$work/screenshots}
    mkdir -p "$shots"
    cat >"$work/steps.json" <<JSON
[{"navigate": "$url$link?next=/reports/$report"},
 {"eval": "JSON.stringify({headline: document.querySelector('h1').innerText, scope: document.querySelector('dl.scope')?.innerText ?? '', app: [...document.querySelectorAll('tr.frame.app td.function .short')].map(e => e.innerText), glueShown: [...document.querySelectorAll('tr.frame.glue')].filter(e => e.offsetParent !== null).length, summaries: document.querySelectorAll('tr.glue-summary').length, missing: document.querySelector('ul.missing-symbols')?.innerText ?? ''})"},
 {"eval": "document.querySelector('#all-frames').scrollIntoView(), 0"},
 {"screenshot": "$name-report.png"},
 {"eval": "document.querySelector('#all-frames').click(), 0"},
 {"eval": "[...document.querySelectorAll('tr.frame.glue')].filter(e => e.offsetParent !== null).length"},
 {"screenshot": "$name-report-all-frames.png"}]
JSON
    python3 "$root/collector/Tests/browser/drive.py" "$chromium" "$work/steps.json" "$shots" >"$work/drive.json" ||
        fail "the browser driver failed: $(cat "$work/drive.json")"
    python3 - "$work/drive.json" "$name" <<'PY' || fail "the report page is not what a reader needs: $(cat "$work/drive.json")"
import json, re, sys
result = json.load(open(sys.argv[1]))
name = sys.argv[2]
assert not result["failed"], result["failed"]
assert not result["errors"], result["errors"]
page = json.loads(result["steps"][1]["value"])
assert "/items/{id}" in page["scope"] and "GET" in page["scope"], page["scope"]
assert all("hummingbird_service" in frame for frame in page["app"] if frame), f"not all the app's: {page['app']}"
assert re.fullmatch(r"closure #\d+ in hummingbird_service", page["app"][0]), page["app"]
assert page["glueShown"] == 0 and page["summaries"] > 0, page
assert name not in page["missing"], f"the app's own binary listed as missing debug files: {page['missing']}"
assert re.fullmatch(r"Index out of range in closure #\d+ in hummingbird_service", page["headline"]), page["headline"]
assert result["steps"][5]["value"] > 0, "checking 'Every frame' shows the runtime and thunk frames"
print("examples check: the report page says", repr(page["headline"]), "shows", page["app"][:3],
      "and folds", page["summaries"], "runs of runtime, library and thunk frames")
PY
    local collector_pid=$pid
    check_otlp_logs "$url" "$key" "$admin"
    kill -TERM "$collector_pid"
    wait "$collector_pid" 2>/dev/null || true
}

# swift-otel 1.6's OTLP/HTTP log exporter beside Blackbox's handler in one MultiplexLogHandler
# (OTLP_LOGS=1), 400 requests from 16 clients at once: every request's "pricing item" line is once in
# Blackbox's JSON Lines output and once among the collector's OTLP lines of its trace. Arguments: the
# collector's URL, an ingest key, the admin token.
check_otlp_logs() {
    local name=hummingbird-service url=$1 key=$2 admin=$3 directory="$work/hummingbird-service-otlp"
    echo "examples check: $name (debug), its lines exported by swift-otel to the collector's /v1/logs too"
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT="$url/v1/logs" OTEL_EXPORTER_OTLP_LOGS_HEADERS="authorization=Bearer $key" \
        start_service "$name" "$(example "$name" debug)" "DIR PORT" "$directory" "TRACING=1 OTLP_LOGS=1"
    seq 1 400 | xargs -P 16 -I{} curl -s -o /dev/null "http://127.0.0.1:$port/items/1"
    # SIGTERM: the group stops the server, then swift-otel's exporter sends its last batch.
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && fail "$name (OTLP logs): still running 10 s after SIGTERM"
    wait "$pid" 2>/dev/null || true
    grep -q "Failed to export" "$directory.err" && fail "$name: swift-otel failed to export: $(grep -m1 "Failed to export" "$directory.err")"
    python3 - "$directory.out" "$url" "$admin" <<'PY' || fail "$name: the OTLP lines at the collector are not the service's"
import json, sys, time, urllib.request
out, url, admin = sys.argv[1:]
lines = [json.loads(l) for l in open(out) if l.startswith("{")]
priced = [l for l in lines if l.get("msg") == "pricing item" and l.get("meta", {}).get("item") == "1"]
traces = {l["trace_id"] for l in priced}
assert len(priced) == 400 and len(traces) == 400, f"{len(priced)} lines in Blackbox's output, {len(traces)} traces"
def trace(trace_id):
    request = urllib.request.Request(f"{url}/api/v1/traces/{trace_id}", headers={"Authorization": f"Bearer {admin}"})
    lines = json.load(urllib.request.urlopen(request))["logLines"]
    return [l["text"] for l in lines if l["path"] == "logs.log" and "pricing item" in l["text"]]
# The collector indexes in the background: asked again for up to 30 s, for a trace of the last request.
last = priced[-1]["trace_id"]
for _ in range(300):
    if trace(last): break
    time.sleep(0.1)
missing, doubled = [], []
for trace_id in traces:
    found = trace(trace_id)
    if not found: missing.append(trace_id)
    elif len(found) > 1 or "service.name=hummingbird-service" not in found[0] or "item=1" not in found[0]: doubled.append(found)
assert not missing and not doubled, f"{len(missing)} traces without their OTLP line, {len(doubled)} not once: {doubled[:2]}"
print("examples check: 400 requests' lines once in Blackbox's output and once in the collector's OTLP logs, each by its trace")
PY
}

check_example hummingbird-service debug "/items/{id}" hb.request.id "DIR PORT" TRACING=1
check_report_page
check_repeated_crashes hummingbird-service release "/items/{id}" hb.request.id "DIR PORT" 12
check_crash_loop
check_quiet hummingbird-service release "DIR PORT" LOG_LEVEL=warning
check_example vapor-service debug "/items/:id" request-id "serve --hostname 127.0.0.1 --port PORT"
check_quiet vapor-service debug "serve --hostname 127.0.0.1 --port PORT --log warning" SWIFT_BACKTRACE=enable=no
echo "examples check: passed"
