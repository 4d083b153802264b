#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from the pinned Go module in this directory
# into a cache outside the clone, keyed by the Prometheus module version:
#   ${WMCO_CACHE:-$HOME/.cache/wmco-rs}/tools/promtool/<version>/promtool
# Go's module and build caches are the control plane's (go/mod, go/build). Only ./cmd/promtool is built, with
# upstream's build tag `remove_all_sd` (no service-discovery plugins: the tests check rules, never a scrape config).
# Skips all work when the binary was built from the current go.mod and go.sum. Prints the binary's path last.
set -euo pipefail

started=$(date +%s)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}

version=$(awk '$1 == "github.com/prometheus/prometheus" && $2 ~ /^v/ { print $2; exit }' "$here/go.mod")
if [[ -z "$version" ]]; then
    echo "build.sh: no github.com/prometheus/prometheus requirement in $here/go.mod" >&2
    exit 2
fi
bin_dir="$cache/tools/promtool/$version"
binary="$bin_dir/promtool"
stamp_value=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
stamp_file="$bin_dir/.built-from"

if [[ -x "$binary" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_value" ]]; then
    echo "promtool $version already built (0 s)" >&2
    echo "$binary"
    exit 0
fi

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export GOMODCACHE="$cache/go/mod"
export GOCACHE="$cache/go/build"
mkdir -p "$bin_dir" "$GOMODCACHE" "$GOCACHE"
rm -f "$stamp_file"
echo "building promtool $version ($(go version))" >&2
ldflags="-s -w -X github.com/prometheus/common/version.Version=$version"
# A temporary name, then a rename: an interrupted build never leaves a binary that looks complete.
(cd "$here" && go build -trimpath -tags remove_all_sd -ldflags="$ldflags" -o "$bin_dir/.promtool.partial" \
    github.com/prometheus/prometheus/cmd/promtool)
mv -f "$bin_dir/.promtool.partial" "$binary"
echo "$stamp_value" > "$stamp_file"
echo "promtool $version built in $(($(date +%s) - started)) s" >&2
echo "$binary"
