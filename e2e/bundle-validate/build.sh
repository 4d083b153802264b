#!/usr/bin/env bash
# Builds bundle-validate (the OLM bundle validator, see README.md) from the pinned Go module in this directory
# into a cache outside the clone: ${WMCO_CACHE:-$HOME/.cache/wmco-rs}/tools/bundle-validate/bundle-validate.
# Go's module and build caches are the control plane's (go/mod, go/build). Skips all work when the binary was
# built from the current go.mod, go.sum and main.go. Prints the binary's path last.
set -euo pipefail

started=$(date +%s)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}
bin_dir="$cache/tools/bundle-validate"
binary="$bin_dir/bundle-validate"
stamp_value=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -d' ' -f1)
stamp_file="$bin_dir/.built-from"

if [[ -x "$binary" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_value" ]]; then
    echo "bundle-validate already built (0 s)" >&2
    echo "$binary"
    exit 0
fi

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export GOMODCACHE="$cache/go/mod"
export GOCACHE="$cache/go/build"
mkdir -p "$bin_dir" "$GOMODCACHE" "$GOCACHE"
rm -f "$stamp_file"
echo "building bundle-validate ($(go version))" >&2
# A temporary name, then a rename: an interrupted build never leaves a binary that looks complete.
(cd "$here" && go build -trimpath -ldflags="-s -w" -o "$bin_dir/.bundle-validate.partial" .)
mv -f "$bin_dir/.bundle-validate.partial" "$binary"
echo "$stamp_value" > "$stamp_file"
echo "bundle-validate built in $(($(date +%s) - started)) s" >&2
echo "$binary"
