#!/bin/sh
# Writes collector/Sources/BlackboxOTLP/Generated again from collector/proto (`make otlp-proto`). The
# generated code is committed, so neither `make test` nor CI runs this: building protoc-gen-swift takes
# minutes. It needs `protoc` (Debian's protobuf-compiler) and builds the plugin from the swift-protobuf
# the collector resolves, so the code matches the runtime it links.
set -eu
cd "$(dirname "$0")/../collector"
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler" >&2; exit 1; }
swift package resolve --scratch-path ../.build >/dev/null
swift build -c release --product protoc-gen-swift --package-path ../.build/checkouts/swift-protobuf \
    --scratch-path ../.build-protoc
out=Sources/BlackboxOTLP/Generated
rm -f "$out"/*.pb.swift
protoc --plugin=protoc-gen-swift=../.build-protoc/release/protoc-gen-swift \
    --swift_opt=Visibility=Package --swift_opt=FileNaming=PathToUnderscores --swift_out="$out" \
    -I proto $(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
echo "wrote $(ls "$out" | wc -l) files in collector/$out"
