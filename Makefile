# Blackbox. `make run` and `make test` work on a fresh Debian machine with the Swift toolchain.
SWIFT ?= swift
APT_PACKAGES := zlib1g-dev libunwind-dev pkg-config
BENCH_PACKAGES := libspdlog-dev g++
RUN_DIR ?= $(CURDIR)/.run/example

.PHONY: run test deps bench-deps build build-release bench format clean

## Run the example app (the collector replaces this once it exists).
run: deps
	$(SWIFT) build --product blackbox-example
	$$($(SWIFT) build --show-bin-path)/blackbox-example $(RUN_DIR)

## Install missing system packages, build everything, run every test.
# The crash matrix also runs a release build of the crashing child (optimized code crashes differently).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) build -c release --product blackbox-crash-child
	BLACKBOX_TEST_BIN=$$($(SWIFT) build --show-bin-path) \
	BLACKBOX_TEST_RELEASE_BIN=$$($(SWIFT) build -c release --show-bin-path) \
		$(SWIFT) test --skip-build --parallel

## Installs only what is missing (apt-get needs root; CI runs as root).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi; \
	fi

bench-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(BENCH_PACKAGES)"

## Logger benchmark against spdlog (see bench/README.md). Writes bench-results/logger.json.
bench: bench-deps
	$(SWIFT) build -c release --product blackbox-bench
	mkdir -p bench/.out bench-results
	g++ -O2 -std=c++17 -o bench/.out/spdlog-bench bench/spdlog_bench.cpp -lspdlog -lfmt -pthread
	python3 bench/run.py --blackbox $$($(SWIFT) build -c release --show-bin-path)/blackbox-bench \
		--spdlog bench/.out/spdlog-bench --out bench-results/logger.json

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

clean:
	rm -rf .build .run bench/.out bench-results
