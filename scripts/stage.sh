#!/usr/bin/env bash
# One stage of `make test`: runs a command in a process group of its own, records its wall time, and
# fails it when it outlives its deadline, after printing every thread's stack of every process still
# in the group (gdb, when installed), so a hung run names what it waited for instead of running into
# CI's 90-minute limit.
# Usage: scripts/stage.sh NAME DEADLINE_SECONDS COMMAND [ARGS...]
# The stage's line ("NAME<TAB>SECONDS<TAB>passed|failed|timed out") is appended to $STAGE_LOG if set.
set -uo pipefail
name=$1 deadline=$2
shift 2
start=$(date +%s%N)

# setsid: the stage's processes (make, swift, the test runner, the children tests start) share one
# process group, so the watchdog can find and end all of them and nothing else.
#
# A new session is also a new scheduling group where the kernel groups by session (autogroup, on by
# default): groups share the cores equally whatever their processes' nice values, so `nice` alone
# gave a background stage as much CPU as the stage it was meant to yield to (two loops at nice 10
# against two at nice 0 in other sessions: equal counts; with the group's nice at 10: 5 %). A stage
# run with STAGE_NICE sets its group's nice, and its processes' for kernels without autogroup.
nice_level=${STAGE_NICE:-0}
if [ "$nice_level" != 0 ]; then
    # shellcheck disable=SC2016 # expanded by the inner shell
    setsid bash -c 'echo "$0" >/proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' "$nice_level" "$@" &
else
    setsid "$@" &
fi
leader=$!
# A developer's Ctrl-C (or CI's TERM) ends the whole stage, not just this script.
trap 'kill -TERM -- "-$leader" 2>/dev/null' INT TERM

dump_stacks() {
    echo "stage '$name': still running after $deadline s; the stacks of its processes follow" >&2
    local pids
    pids=$(ps -o pid= -g "$leader" 2>/dev/null | tr -d ' ')
    ps -o pid,ppid,etime,stat,args -g "$leader" >&2 2>/dev/null || true
    if ! command -v gdb >/dev/null 2>&1; then
        echo "(gdb is not installed: no stacks)" >&2
        return
    fi
    for pid in $pids; do
        # Shells, make and the package manager's driver only wait for their children.
        case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
            bash | sh | make | swift | swift-build | swift-test | timeout | tee | sleep | "") continue ;;
        esac
        echo "=== process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-300)" >&2
        timeout 120 gdb -batch -nx -iex "set auto-load off" -p "$pid" -ex "set pagination off" -ex "info threads" \
            -ex "thread apply all bt 40" 2>&1 | grep -vE '^(\[New LWP|warning: |Downloading)' >&2 || true
    done
}

(
    sleep "$deadline"
    kill -0 "$leader" 2>/dev/null || exit 0
    dump_stacks
    touch "${TMPDIR:-/tmp}/stage-timed-out.$leader"
    kill -TERM -- "-$leader" 2>/dev/null
    sleep 10
    kill -KILL -- "-$leader" 2>/dev/null
) &
watchdog=$!

wait "$leader"
status=$?
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
seconds=$((($(date +%s%N) - start + 500000000) / 1000000000))
outcome=passed
[ "$status" -eq 0 ] || outcome=failed
if [ -e "${TMPDIR:-/tmp}/stage-timed-out.$leader" ]; then
    rm -f "${TMPDIR:-/tmp}/stage-timed-out.$leader"
    outcome="timed out"
    status=124
    echo "stage '$name': ended by its watchdog after $deadline s" >&2
fi
[ -n "${STAGE_LOG:-}" ] && printf '%s\t%s\t%s\n' "$name" "$seconds" "$outcome" >>"$STAGE_LOG"
exit "$status"
