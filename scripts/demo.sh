#!/usr/bin/env bash
# `make demo`: a collector, an example app that logs, fails an `ensure` and crashes, the same app
# started again so it uploads, and the URL where the crash group can be seen. The collector keeps
# running until Ctrl-C, unless DEMO_KEEP_RUNNING=0 (then the script checks the group and stops).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.build/debug"  # the Makefile builds every package here into one folder
collector="$bin/blackbox-collector"
data="$root/.run/demo"
port=${DEMO_PORT:-8090}
rm -rf "$data"
mkdir -p "$data"

"$collector" serve --data-dir "$data/collector" --port "$port" --quiet > "$data/collector.out" 2>&1 &
collector_pid=$!
trap 'kill $collector_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    grep -q "read the API" "$data/collector.out" 2>/dev/null && break
    kill -0 $collector_pid 2>/dev/null || { cat "$data/collector.out"; exit 1; }
    sleep 0.1
done
key=$(awk '/ingest key:/ {print $3}' "$data/collector.out")
admin=$(awk '/admin token:/ {print $3}' "$data/collector.out")
url=$(awk '/listening on/ {print $NF; exit}' "$data/collector.out")

echo "== 1. the example app logs, fails an ensure, and crashes"
"$bin/blackbox-example" "$data/app" --crash --collector "$url" --key "$key" > "$data/run1.out" 2>&1 && {
    echo "the example did not crash"; exit 1; } || echo "   crashed as planned (exit status $?)"
echo "== 2. started again: it processes the crash report and uploads it"
"$bin/blackbox-example" "$data/app" --collector "$url" --key "$key" > "$data/run2.out" 2>&1
grep -m2 "uploaded" "$data/run2.out" | sed 's/^/   /'

group=$(curl -sS -H "Authorization: Bearer $admin" "$url/api/v1/groups" | python3 -c '
import json, sys
groups = [g for g in json.load(sys.stdin)["items"] if g["kind"] == "crash"]
print(groups[0]["id"] if groups else "")')
if [ -z "$group" ]; then
    echo "no crash group arrived at the collector"; exit 1
fi
echo
link=$(curl -sS -X POST -H "Authorization: Bearer $admin" "$url/api/v1/login-links" | python3 -c '
import json, sys
print(json.load(sys.stdin)["path"])')
echo "The crash group:  $url$link?next=/groups/$group   (a one-time sign-in link)"
echo "Admin token:      $admin   (sign in at $url/login)"
echo "JSON API:         curl -H 'Authorization: Bearer $admin' $url/api/v1/groups/$group"
echo "The app's files:  $data/app   (try: $bin/blackbox logs $data/app)"
if [ "${DEMO_KEEP_RUNNING:-1}" = 1 ]; then
    echo
    echo "The collector runs until Ctrl-C."
    wait $collector_pid
fi
