#!/usr/bin/env bash
# Builds the release collector of a baseline commit once and caches it:
#   bench/collector_baseline.sh COMMIT SCRATCH_PATH
# prints the cached binary's path. The build checks COMMIT out in a temporary worktree. When COMMIT
# declares the same dependencies as the work tree, it builds in SCRATCH_PATH, the folder the current
# collector builds in, reusing the dependencies compiled there: only Blackbox's own modules compile
# (~4 minutes here), for the baseline and again for the current build. Otherwise (older commits
# pinned versions with `exact:`) it builds in a scratch folder of the cache's own, so that the
# current build's dependencies are not rebuilt at other versions and back (a full build, once).
set -euo pipefail

commit=$(git rev-parse --verify "$1^{commit}")
root="${BLACKBOX_BASELINE_CACHE:-$HOME/.cache/blackbox/collector-baseline}"
cache="$root/$commit"
dependencies() { grep -h '^ *\.package(' "$@" || true; }
if [ "$(git show "$commit:Package.swift" "$commit:collector/Package.swift" | dependencies)" = \
	"$(dependencies Package.swift collector/Package.swift)" ]; then
	scratch=$(realpath "$2")
else
	mkdir -p "$root/scratch"
	scratch=$(realpath "$root/scratch")
fi
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
