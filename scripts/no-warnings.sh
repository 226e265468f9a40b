#!/usr/bin/env bash
# Runs a build command and fails if the compiler warned about this repository's own sources or tests
# (dependencies' warnings are theirs). Used by `make test`, so CI, building a fresh clone where every
# file compiles, holds the code to zero warnings. Usage: scripts/no-warnings.sh <command> [args...]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || exit "$status"
# Paths as the compiler prints them: <root>/{Sources,Tests,collector/Sources,collector/Tests}/…: warning:
if grep -E "^$root/(collector/)?(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u | grep .; then
    echo "error: the build above has warnings in this repository's code (they must be fixed)" >&2
    exit 1
fi
# A warning inside a macro's expansion (`#expect(try await …)`) is printed as the macro's, with the
# file it came from on the next line.
if awk -v root="$root" '
    /^macro expansion .*: warning:/ { pending = $0; next }
    pending != "" {
        if (index($0, root "/Sources/") || index($0, root "/Tests/") \
            || index($0, root "/collector/Sources/") || index($0, root "/collector/Tests/")) print pending " " $0
        pending = ""
    }' "$log" | sort -u | grep .; then
    echo "error: the build above has warnings in this repository's code, in macro expansions (they must be fixed)" >&2
    exit 1
fi
