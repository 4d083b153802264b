#!/usr/bin/env bash
# Builds bundle-validate (the OLM bundle validator, see README.md) from the pinned Go module in this directory
# into a cache outside the clone: ${WMCO_CACHE:-$HOME/.cache/wmco-rs}/tools/bundle-validate/bundle-validate.
# Go's module and build caches are the control plane's (go/mod, go/build). Skips all work when the binary was
# built from the current go.mod, go.sum and main.go. Prints the binary's path last.
set -euo pipefail

started=$(date +%s)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}
binary="$cache/tools/bundle-validate/bundle-validate"
stamp_value=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -d' ' -f1)
# shellcheck source=../go-build.sh
source "$here/../go-build.sh"

if is_current "$binary" "$stamp_value"; then
    echo "bundle-validate already built (0 s)" >&2
    echo "$binary"
    exit 0
fi

echo "building bundle-validate ($(go version))" >&2
go_build_into "$binary" "$stamp_value" "$here" -ldflags="-s -w" .
echo "bundle-validate built in $(($(date +%s) - started)) s" >&2
echo "$binary"
