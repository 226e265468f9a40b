#!/usr/bin/env bash
# An app adopts Blackbox the way the README says, from a tagged git repository of this checkout:
#   1. `from: "<this version>"` and the Blackbox product alone resolves swift-log and swift-atomics, nothing
#      else, and builds and runs;
#   2. with the Upload trait, beside vapor/jwt-kit 5 (swift-crypto 4) and swift-otel 1.6, it
#      resolves (swift-crypto at 4.x), and the app built from Blackbox, BlackboxUpload and JWTKit runs.
# swift-otel is resolved, not built: its build alone takes ~7 minutes on 2 cores (gRPC, protobuf).
# Every package comes from the machine's package mirror, as for the project itself. Each app resolves
# in its own folder (its own Package.resolved, as an app's). The server app builds in the build folder
# the rest of `make test` uses (Makefile: SCRATCH), so SwiftNIO and swift-crypto are not compiled once
# more (the Blackbox modules are, from the tagged copy); the logging-only app in a folder of its own:
# resolving it in the shared one would remove every other checkout there, and the next build would
# clone and compile them again (measured: the server app then took 10 minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}
scratch=${SCRATCH:-$root/.build}
# The Makefile's BUILD_FLAGS: other flags would build every module in the shared folder again.
build_flags=(--scratch-path "$scratch")
# Deterministic hashing for the package manager only: it orders trait flags by a Set (Makefile).
swift_build=(env SWIFT_DETERMINISTIC_HASHING=1 "$swift" build)
work=$(mktemp -d)
version=$(sed -n 's/.*static let current = "\(.*\)"/\1/p' "$root/Sources/BlackboxFormat/BlackboxVersion.swift")
[ -n "$version" ] || { echo "adoption check: no version in BlackboxVersion.swift" >&2; exit 1; }
trap 'rm -rf "$work"' EXIT

fail() {
    echo "adoption check: $*" >&2
    exit 1
}

# The working tree's tracked files (what a commit of it would hold), as a repository tagged with this
# version (BlackboxVersion.current, which CLITests holds equal to CHANGELOG.md's latest release).
mkdir "$work/blackbox"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf -) | tar xf - -C "$work/blackbox"
git -C "$work/blackbox" init -q
git -C "$work/blackbox" add -A
git -C "$work/blackbox" -c user.name=check -c user.email=check@localhost commit -qm "checkout"
git -C "$work/blackbox" tag "$version"
url="file://$work/blackbox"

app() {  # name, dependencies, products, main.swift
    mkdir -p "$work/$1/Sources/app"
    cat >"$work/$1/Package.swift" <<EOF
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "$1",
    platforms: [.macOS(.v15)],
    dependencies: [$2],
    targets: [.executableTarget(name: "app", dependencies: [$3])]
)
EOF
    printf '%s\n' "$4" >"$work/$1/Sources/app/main.swift"
}

resolved() {  # the identities in an app's Package.resolved, one a line
    grep -o '"identity" : "[^"]*"' "$work/$1/Package.resolved" | cut -d'"' -f4 | sort
}

echo "adoption check 1: Blackbox alone"
app logging-only ".package(url: \"$url\", from: \"$version\")" \
    '.product(name: "Blackbox", package: "blackbox")' \
    'import Blackbox
import Logging
let runtime = try Blackbox.start(BlackboxConfiguration(appName: "adoption", directory: CommandLine.arguments[1]))
Logger(label: "adoption").info("hello from an adopting app")
runtime.shutdown()
print("logged")'
(cd "$work/logging-only" && "$swift" package resolve >/dev/null)
identities=$(resolved logging-only | tr '\n' ' ')
[ "$identities" = "blackbox swift-atomics swift-log " ] || fail "Blackbox alone resolved: $identities"
(cd "$work/logging-only" && "${swift_build[@]}" -q 2>&1 | grep -v "unhandled" || true)
out=$("$work/logging-only/.build/debug/app" "$work/logging-only-diagnostics" </dev/null 2>/dev/null)
[ "$(printf '%s\n' "$out" | tail -1)" = "logged" ] || fail "the logging app printed: $out"
# Not a terminal: the default outputs are the log file and JSON Lines on stdout.
printf '%s\n' "$out" | grep -q '"msg":"hello from an adopting app"' || fail "no JSON line on stdout: $out"
grep -rq "hello from an adopting app" "$work/logging-only-diagnostics/logs" || fail "the line is not in the log file"

echo "adoption check 2: BlackboxUpload beside jwt-kit 5 and swift-otel 1.6"
app server "
        .package(url: \"$url\", from: \"$version\", traits: [\"Upload\"]),
        .package(url: \"https://github.com/vapor/jwt-kit\", from: \"5.0.0\"),
        .package(url: \"https://github.com/swift-otel/swift-otel\", from: \"1.6.0\"),
    " '
        .product(name: "Blackbox", package: "blackbox"),
        .product(name: "BlackboxUpload", package: "blackbox"),
        .product(name: "JWTKit", package: "jwt-kit"),
    ' 'import Blackbox
import BlackboxUpload
import JWTKit
let endpoint = try CollectorEndpoint(url: "http://127.0.0.1:9", key: "k")
let keys = JWTKeyCollection()
print("upload to \(endpoint.baseURL.absoluteString), \(type(of: keys)) ready")'
(cd "$work/server" && "$swift" package resolve --scratch-path "$scratch" >/dev/null)
for needed in jwt-kit swift-otel swift-crypto async-http-client; do
    resolved server | grep -qx "$needed" || fail "with the Upload trait, $needed was not resolved"
done
crypto=$(grep -A6 '"identity" : "swift-crypto"' "$work/server/Package.resolved" | grep '"version"' | cut -d'"' -f4)
case "$crypto" in 4.*) ;; *) fail "swift-crypto resolved at $crypto, not 4.x (jwt-kit 5 needs 4)" ;; esac
rm -f "$scratch/debug/app"  # another run's app must not pass for this one
(cd "$work/server" && "${swift_build[@]}" "${build_flags[@]}" -q --product app 2>&1 | grep -v "unhandled" || true)
"$scratch/debug/app" | grep -q "upload to http://127.0.0.1:9" || fail "the server app did not run"
echo "adoption check: passed (Blackbox alone: $identities; with Upload: swift-crypto $crypto beside jwt-kit and swift-otel)"
