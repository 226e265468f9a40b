#!/usr/bin/env bash
# `make test`: every stage in order, each with a deadline (scripts/stage.sh), stopping at the first
# failure; at the end, passed or not, a line per stage with its wall time and the ten slowest tests,
# so that CI's log says where the time went.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make=${MAKE:-make}
export STAGE_LOG="$root/.build/test-stages.tsv"
export TEST_RESULTS="$root/.build/test-results"
mkdir -p "$root/.build"
rm -rf "$STAGE_LOG" "$TEST_RESULTS"
mkdir -p "$TEST_RESULTS"

started=$(date +%s)
background=()
report() {
    # A failed run leaves no background stage running (each ends its own process group on TERM).
    for job in "${background[@]}"; do
        pkill -TERM -P "$job" 2>/dev/null
        kill -TERM "$job" 2>/dev/null
    done
    echo
    echo "make test: where the time went (stages in the background overlap the others)"
    awk -F'\t' '{ printf "  %-40s %5d s  %s\n", $1, $2, $3 }' "$STAGE_LOG" 2>/dev/null
    awk -v wall=$(($(date +%s) - started)) 'BEGIN { printf "  %-40s %5d s (%.1f min)\n", "wall time", wall, wall / 60 }'
    python3 "$root/scripts/slowest-tests.py" "$TEST_RESULTS" 10 || true
}
trap report EXIT

# The whole run's bound: well under CI's 90 minutes, so that a hung run fails with its stacks printed
# instead of being cut off with nothing said.
total_deadline=${TEST_DEADLINE:-4500}

# name, deadline in seconds, make target. The deadlines are several times each stage's time on this
# 2-core machine (make test prints them): a stage past its deadline is hung, not slow. No stage runs
# past the whole run's bound.
stage() {
    local left=$((total_deadline - ($(date +%s) - started)))
    local deadline=$(($2 < left ? $2 : left))
    [ "$deadline" -gt 0 ] || { echo "make test: the run's bound of $total_deadline s is spent" >&2; exit 1; }
    "$root/scripts/stage.sh" "$1" "$deadline" "$make" --no-print-directory "$3" || {
        echo "make test: stage '$1' failed" >&2
        exit 1
    }
}

# A background stage's failure fails the run when it is waited for.
wait_for() {  # process id, what it was
    wait "$1" || {
        echo "make test: $2 failed" >&2
        exit 1
    }
}

# Stages side by side: a build beside tests. The tests pass under load (a test that needs a quiet
# machine is a wrong test), and most of their time is waiting for the children and servers they start,
# so the build gets the cores they leave.
stages_side_by_side() {  # name, deadline, target, name, deadline, target
    stage "$1" "$2" "$3" &
    local first=$!
    stage "$4" "$5" "$6" &
    local second=$!
    local failed=0
    wait "$first" || failed=1
    wait "$second" || failed=1
    [ "$failed" = 0 ] || exit 1
}

# Background stages yield the cores through their scheduling group's nice (STAGE_NICE, scripts/stage.sh):
# a process's own nice does not act across sessions, and every stage is a session of its own.
#
# What builds need first; the test-only packages (a browser, PostgreSQL…) and the Python peers are
# fetched and installed beside the builds, which leave the network and the disk idle.
stage "system packages (build)" 900 deps
(STAGE_NICE=10 stage "system packages (tests)" 900 test-deps && STAGE_NICE=10 stage "python peers" 900 python-peers) &
installs=$!
background+=("$installs")
# The release builds (the crash matrix's optimized child, then the Hummingbird example as users ship
# it) in their own build folder, beside everything below. The crash child shares the cores with the
# library's debug build (the library's tests need both); the shipped example, needed only at the end,
# yields (nice 5: about a quarter of the cores against the debug builds, and whatever the tests leave
# idle). At nice 10 it was still building 1,313 s after it started, beside the collector's tests
# (2026-11-28).
(
    stage "build: release crash child" 2400 build-crash-child && touch "$TEST_RESULTS/crash-child.built" &&
        STAGE_NICE=5 stage "build: shipped Hummingbird (release)" 3000 build-shipped-example
) &
release=$!
background+=("$release")
stage "lint" 600 lint
stage "build: library and tests" 2400 build-library-debug
# The library's tests need the release crash child.
for _ in $(seq 1 2400); do
    [ -e "$TEST_RESULTS/crash-child.built" ] && break
    kill -0 "$release" 2>/dev/null || wait_for "$release" "the release crash child's build"
    sleep 1
done
[ -e "$TEST_RESULTS/crash-child.built" ] || { echo "make test: no release crash child after 40 minutes" >&2; exit 1; }
stages_side_by_side "test: library" 1200 test-library "build: collector and tests" 2400 build-collector
wait_for "$installs" "installing the test packages and Python peers"
stage "test: collector" 1200 test-collector
stage "build: examples (debug)" 2400 build-examples
wait_for "$release" "the release builds"
stage "examples (Hummingbird, Vapor)" 1200 run-examples
stage "adoption (a scratch app)" 1800 test-adoption
