# Blackbox. `make run` and `make test` work on a fresh Debian machine with the Swift toolchain.
SWIFT ?= swift
APT_PACKAGES := zlib1g-dev libunwind-dev pkg-config libsqlite3-dev llvm libbrotli-dev
TEST_PACKAGES := chromium zip postgresql nginx debuginfod python3 python3-venv curl systemd
BENCH_PACKAGES := libspdlog-dev g++ wrk
# The repository's own builds enable every trait (Package.swift): the CLI and the uploader. Apps get
# neither unless they ask.
TRAITS := --traits Tools
RUN_DIR ?= $(CURDIR)/.run/example
COLLECTOR_DATA ?= $(CURDIR)/.run/collector
# One build folder for every package here (the root, collector/, Examples/*): each dependency (SwiftNIO,
# swift-crypto, Hummingbird…) is compiled once, not once per package. Every build into this folder
# passes the same flags (scripts/*-check.sh too): a module built with other flags is built again. The
# index store stays on although it took 14% of a debug build (SwiftNIO's, 120 s against 103 s): the
# package manager's test discovery reads the test targets' units even when every test is Swift
# Testing's ("index store path does not exist" with --disable-index-store, 2026-11-27).
SCRATCH := $(CURDIR)/.build
BUILD_FLAGS := --scratch-path $(SCRATCH)
# The release builds (the crash matrix's optimized child, the shipped Hummingbird example) in a folder
# of their own: a package manager holds its folder for the whole build, and these run beside the debug
# builds and tests (scripts/test-all.sh); the two configurations share no compiled module anyway.
RELEASE_SCRATCH := $(CURDIR)/.build-release
RELEASE_FLAGS := --scratch-path $(RELEASE_SCRATCH) -c release
# The package manager orders a package's trait flags by a Set's iteration, which Swift seeds anew in
# every process: without this, a second `swift build` of the same package recompiled Blackbox's modules
# half the time (their command line had changed). Set for builds only, never for the tests.
SWIFT_BUILD := env SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) build
# Links to the platform's folders: tests get their real paths (reports name images by real path).
BIN := $(SCRATCH)/debug
RELEASE_BIN := $(RELEASE_SCRATCH)/release
# Pinned third-party peers from PyPI (scripts/python-peers.txt): the real Sentry SDK, sentry-cli and
# Bugsink for the Sentry protocol tests. Made once per machine and set of pins (a venv under
# ~/.cache, named by the pins' hash), reused by every clone; `.venv` links to it.
PEERS_HASH := $(shell sha256sum scripts/python-peers.txt | cut -c1-16)
PYTHON_VENV ?= $(HOME)/.cache/blackbox/python-peers-$(PEERS_HASH)
# Where `make test` keeps its stage times and the tests' xUnit files (scripts/test-all.sh).
TEST_RESULTS ?= $(SCRATCH)/test-results

.PHONY: help run example demo test check lint build-library build-library-debug build-crash-child build-shipped-example test-library build-collector test-collector test-hostile-release test-adoption test-examples build-tools build-examples run-examples deps test-deps python-peers bench-deps bench bench-journald bench-server bench-crash bench-collector otlp-proto format clean

## This list.
help:
	@awk '/^## /{doc = doc substr($$0, 4) " "; next} /^[a-z-]+:/{if (doc != "") {split($$0, t, ":"); printf "  %-16s %s\n", t[1], doc}; doc = ""; next} {doc = ""}' $(MAKEFILE_LIST)

## The collector on 127.0.0.1:8080 with an embedded SQLite store in .run/collector; prints the URL,
## the keys and a curl command that uploads a bundle.
run: deps
	cd collector && $(SWIFT_BUILD) $(BUILD_FLAGS) --product blackbox-collector
	$(BIN)/blackbox-collector serve --data-dir $(COLLECTOR_DATA)

## An example app that logs through Blackbox and prints where its files are.
example: deps
	$(SWIFT_BUILD) $(TRAITS) $(BUILD_FLAGS) --product blackbox-example
	$(BIN)/blackbox-example $(RUN_DIR)

## A collector, an example app that crashes, the app again so it uploads; prints where to look.
demo: deps
	$(SWIFT_BUILD) $(TRAITS) $(BUILD_FLAGS) --product blackbox-example
	$(SWIFT_BUILD) $(TRAITS) $(BUILD_FLAGS) --product blackbox
	cd collector && $(SWIFT_BUILD) $(BUILD_FLAGS) --product blackbox-collector
	scripts/demo.sh

## Install missing system packages, build everything, run every test (library, then collector, then
## the server examples, then a scratch app that adopts Blackbox from a tagged copy of this tree); each
## stage has a deadline, and the end prints each stage's time and the ten slowest tests.
test:
	@MAKE="$(MAKE)" scripts/test-all.sh

## The server examples (Hummingbird, Vapor) build against this checkout and behave as docs/servers.md
## says: a crashing request's report names its route, method and request id.
test-examples: build-tools build-examples build-shipped-example run-examples

# The CLI and the collector the examples check uses (`make test` builds them in earlier stages).
build-tools: deps
	cd collector && $(SWIFT_BUILD) $(BUILD_FLAGS) --product blackbox-collector
	$(SWIFT_BUILD) $(TRAITS) $(BUILD_FLAGS) --product blackbox

# The example services only, never the CLI or the collector the tests run (`make test` builds those in
# earlier stages; a build of either here would re-resolve the folder for its package): debug builds of
# both, and the Hummingbird one in release, as users ship it.
EXAMPLES_ENV = SWIFT=$(SWIFT) SCRATCH=$(SCRATCH) RELEASE_SCRATCH=$(RELEASE_SCRATCH)
build-examples: deps
	$(EXAMPLES_ENV) EXAMPLES_BUILD_ONLY=debug scripts/examples-check.sh

build-shipped-example: deps
	$(EXAMPLES_ENV) EXAMPLES_BUILD_ONLY=release scripts/examples-check.sh

run-examples:
	$(EXAMPLES_ENV) EXAMPLES_SKIP_BUILD=1 scripts/examples-check.sh

## A scratch app resolves and builds Blackbox as the README says: alone (swift-log and swift-atomics
## only), and with the Upload trait beside jwt-kit 5 and swift-otel 1.6.
test-adoption: deps
	SWIFT=$(SWIFT) SCRATCH=$(SCRATCH) scripts/adoption-check.sh

## A quick inner loop: format lint and the library's tests (no browser, database or collector).
check: deps lint build-library test-library

## swift format lint --strict over every source and test (as CI runs it).
lint:
	$(SWIFT) format lint --strict --parallel --recursive Sources Tests collector/Sources collector/Tests Examples/*/Sources Examples/*/Package.swift

## The library, its CLI, example and test children, and its tests, failing on a warning in this
## repository's code; the crash matrix also runs a release build of the crashing child (optimized code
## crashes differently).
build-library: build-library-debug build-crash-child

build-library-debug: deps
	scripts/no-warnings.sh $(SWIFT_BUILD) $(TRAITS) $(BUILD_FLAGS) --build-tests

build-crash-child: deps
	$(SWIFT_BUILD) $(TRAITS) $(RELEASE_FLAGS) --product blackbox-crash-child

# The tests run from their built bundles, not through `swift test`: no package manager touches the
# build folder while `make test` builds the next package beside them.
#
# At most TEST_WIDTH tests of a bundle run at once. Unbounded, every test starts at once, and their
# jobs queue first in, first out on the global executor's two threads (one per core): a job waited
# 20-26 s behind the others (BlackboxTestSupport/ExecutorWatch.swift reported it), and tests that
# give a ticker, a database connection or a client 10-30 s failed. Twelve keep both cores busy.
TEST_WIDTH ?= 12
TEST_FLAGS = --testing-library swift-testing --experimental-maximum-parallelization-width $(TEST_WIDTH)

test-library:
	mkdir -p $(TEST_RESULTS)
	BLACKBOX_TEST_BIN=$$(realpath $(BIN)) BLACKBOX_TEST_RELEASE_BIN=$$(realpath $(RELEASE_BIN)) \
		$(BIN)/blackboxPackageTests.xctest $(TEST_FLAGS) --xunit-output $(TEST_RESULTS)/library.xml

build-collector: deps
	cd collector && ../scripts/no-warnings.sh $(SWIFT_BUILD) $(BUILD_FLAGS) --build-tests

# The end-to-end tests run the root package's CLI and example app against collector processes; the
# demo runs once as a smoke test.
test-collector: python-peers
	mkdir -p $(TEST_RESULTS)
	cd collector && BLACKBOX_REQUIRE_CHROMIUM=1 \
		BLACKBOX_COLLECTOR_BIN=$$(realpath $(BIN))/blackbox-collector \
		BLACKBOX_BIN_DIR=$$(realpath $(BIN)) \
		BLACKBOX_RELEASE_BIN_DIR=$$(realpath $(RELEASE_BIN)) \
		BLACKBOX_PYTHON=$(PYTHON_VENV)/bin/python \
		$(BIN)/blackbox-collectorPackageTests.xctest $(TEST_FLAGS) \
		--xunit-output $(TEST_RESULTS)/collector.xml
	DEMO_KEEP_RUNNING=0 DEMO_PORT=0 scripts/demo.sh

## The hostile suites against a release collector process, as deployed (issue 47's bar; `make test`
## runs them against the debug build it already has: a release collector is ten more minutes of both
## cores).
test-hostile-release: build-collector python-peers
	cd collector && $(SWIFT_BUILD) $(RELEASE_FLAGS) --product blackbox-collector
	cd collector && BLACKBOX_COLLECTOR_BIN=$$(realpath $(RELEASE_BIN))/blackbox-collector \
		BLACKBOX_BIN_DIR=$$(realpath $(BIN)) \
		BLACKBOX_PYTHON=$(PYTHON_VENV)/bin/python \
		$(BIN)/blackbox-collectorPackageTests.xctest $(TEST_FLAGS) --filter Hostile

## The pinned PyPI peers, made once per machine and set of pins (see PYTHON_VENV above).
python-peers: $(PYTHON_VENV)/.installed
	ln -sfn $(PYTHON_VENV) .venv
# No prerequisite: the venv's name holds the pins' hash, and a fresh clone's newer pins file must not
# make the machine's venv again.
$(PYTHON_VENV)/.installed:
	rm -rf $(PYTHON_VENV)
	python3 -m venv $(PYTHON_VENV)
	$(PYTHON_VENV)/bin/pip install -q --disable-pip-version-check -r scripts/python-peers.txt
	touch $@

## Installs only what is missing (apt-get needs root; CI runs as root).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi; \
	fi

test-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(TEST_PACKAGES)"

bench-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(BENCH_PACKAGES)"

## Writes the collector's OTLP messages (collector/Sources/BlackboxOTLP/Generated) again from
## collector/proto; needs protoc. The output is committed: nothing else runs this.
otlp-proto:
	scripts/generate-otlp.sh

## Logger benchmark against spdlog (see bench/README.md). Writes bench-results/logger.json.
bench: bench-deps
	$(SWIFT) build $(TRAITS) -c release --product blackbox-bench
	mkdir -p bench/.out bench-results
	g++ -O2 -std=c++17 -o bench/.out/spdlog-bench bench/spdlog_bench.cpp -lspdlog -lfmt -pthread
	python3 bench/run.py --blackbox $$($(SWIFT) build -c release --show-bin-path)/blackbox-bench \
		--spdlog bench/.out/spdlog-bench --out bench-results/logger.json

## W2 with the file alone and with the file and the systemd journal, beside a systemd-journald of its
## own in a private mount namespace (root only). Writes bench-results/journald.json.
bench-journald: bench-deps
	$(SWIFT) build $(TRAITS) -c release --product blackbox-bench
	mkdir -p bench-results
	bench/journald_run.sh $$($(SWIFT) build -c release --show-bin-path)/blackbox-bench bench-results/journald.json $(BENCH_REPS)

## One logged line per request in a Hummingbird 2 service (bench/server) under wrk: Blackbox beside a
## no-op handler, swift-log's StreamLogHandler and the line disabled; CPU per request per thread group.
## Writes bench-results/server.json.
bench-server: bench-deps
	cd bench/server && $(SWIFT) build -c release
	mkdir -p bench-results
	python3 bench/server_run.py --server bench/server/.build/release/bench-server --out bench-results/server.json

## Crash handler benchmark: time to a complete raw report with 8, 64 and 256 threads captured, 20
## crashes each, beside the Swift runtime's backtracer on the same crash; then a crash's whole life
## with and without crash-time delivery to a collector on loopback. Writes bench-results/crash-threads.json.
bench-crash: deps
	$(SWIFT) build $(TRAITS) -c release --product blackbox-crash-child
	$(SWIFT) build $(TRAITS) -c release --product blackbox-test-child
	$(SWIFT) build $(TRAITS) -c release --product blackbox
	cd collector && $(SWIFT) build -c release --product blackbox-collector
	mkdir -p bench-results
	python3 bench/crash_threads.py --child $$($(SWIFT) build -c release --show-bin-path)/blackbox-crash-child \
		--test-child $$($(SWIFT) build -c release --show-bin-path)/blackbox-test-child \
		--helper $$($(SWIFT) build -c release --show-bin-path)/blackbox \
		--collector-binary collector/.build/release/blackbox-collector --out bench-results/crash-threads.json

## Collector benchmark: concurrent clients on loopback, beside dd and bare fsync numbers from the
## same run. Writes bench-results/collector.json. With BASELINE=<commit or tag>, the same rows run
## against that commit's collector too (built once, cached in ~/.cache/blackbox/collector-baseline),
## BENCH_REPS times each (default 3), alternating, and print current/baseline ratios; writes
## bench-results/collector-vs-baseline.json. BENCH_ROWS picks rows (see the driver).
BENCH_REPS ?= 3
bench-collector: python-peers
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) postgresql nginx wrk"
	$(if $(BASELINE),mkdir -p collector/.build && bench/collector_baseline.sh $(BASELINE) collector/.build > collector/.build/baseline-path)
	cd collector && $(SWIFT) build -c release --product blackbox-collector
	cd collector && $(SWIFT) build -c release --product blackbox-collector-bench
	mkdir -p bench-results
ifeq ($(BASELINE),)
	BENCH_DIR=$(CURDIR) BLACKBOX_PYTHON=$(PYTHON_VENV)/bin/python collector/.build/release/blackbox-collector-bench \
		collector/.build/release/blackbox-collector bench-results/collector.json
else
	BENCH_DIR=$(CURDIR) BLACKBOX_PYTHON=$(PYTHON_VENV)/bin/python python3 bench/compare_collectors.py \
		--driver collector/.build/release/blackbox-collector-bench --current collector/.build/release/blackbox-collector \
		--baseline $$(cat collector/.build/baseline-path) --baseline-name $(BASELINE) --reps $(BENCH_REPS) \
		--out bench-results/collector-vs-baseline.json
endif

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift collector/Sources collector/Tests collector/Package.swift

clean:
	rm -rf .build .build-release collector/.build bench/server/.build .run bench/.out bench-results
