#!/usr/bin/env bash
# `make bench-journald`: W2 with the file alone and with the file and the systemd journal, beside a
# systemd-journald of its own in a private mount namespace (root only: nothing reaches the machine's
# journal). journald's rate limit is off and its storage volatile, so what is measured is the native
# protocol and journald's intake, not its defaults' 10,000 entries per 30 s.
# Usage: bench/journald_run.sh BLACKBOX_BENCH OUT [REPS]
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "bench-journald needs root (a private mount namespace)" >&2; exit 1; }
bench=$1 out=$2 reps=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
journald=$(ls /lib/systemd/systemd-journald /usr/lib/systemd/systemd-journald 2>/dev/null | head -1)
[ -n "$journald" ] || { echo "no systemd-journald (apt-get install systemd)" >&2; exit 1; }
exec unshare -m /bin/bash -s "$bench" "$out" "$reps" "$root" "$journald" <<'INNER'
set -euo pipefail
bench=$1 out=$2 reps=$3 root=$4 journald=$5
mount --make-rprivate /
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/log && mount -t tmpfs tmpfs /run/log
if [ -d /var/log/journal ]; then mount -t tmpfs tmpfs /var/log/journal; fi
config=$(mktemp)
printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\nRuntimeMaxUse=4G\n' >"$config"
mount --bind "$config" /etc/systemd/journald.conf
"$journald" >/dev/null 2>&1 &
journald_pid=$!
trap 'kill $journald_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
python3 "$root/bench/run.py" --blackbox "$bench" --spdlog /bin/false --out "$out" --reps "$reps" --workloads W2 --journald
INNER
