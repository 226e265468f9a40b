#!/usr/bin/env bash
# Builds the release collector of a baseline commit once and caches it:
#   bench/collector_baseline.sh COMMIT SCRATCH_PATH
# prints the cached binary's path. The build checks COMMIT out in a temporary worktree and builds
# it in SCRATCH_PATH, the folder the current collector builds in, so the dependencies compiled there
# are reused: only Blackbox's own modules compile, for the baseline and again for the current build.
set -euo pipefail

commit=$(git rev-parse --verify "$1^{commit}")
scratch=$(realpath "$2")
cache="${BLACKBOX_BASELINE_CACHE:-$HOME/.cache/blackbox/collector-baseline}/$commit"
if [ -x "$cache/blackbox-collector" ]; then
	echo "$cache/blackbox-collector"
	exit 0
fi

worktree=$(mktemp -d /tmp/blackbox-baseline.XXXXXX)
cleanup() {
	git worktree remove --force "$worktree/blackbox" >/dev/null 2>&1 || true
	rm -rf "$worktree"
}
trap cleanup EXIT
git worktree add --quiet --detach "$worktree/blackbox" "$commit"
# The build's output goes to stderr: stdout carries the binary's path only.
(cd "$worktree/blackbox/collector" &&
	env SWIFT_DETERMINISTIC_HASHING=1 ${SWIFT:-swift} build -c release --product blackbox-collector \
		--scratch-path "$scratch") >&2
mkdir -p "$cache.partial"
cp "$scratch/release/blackbox-collector" "$cache.partial/"
# Its web UI's templates and assets.
for resources in "$scratch"/release/*.resources; do
	[ -e "$resources" ] && cp -r "$resources" "$cache.partial/"
done
rm -rf "$cache"
mv "$cache.partial" "$cache"
echo "$cache/blackbox-collector"
