#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from the pinned Go module in this directory
# into a cache outside the clone, keyed by the Prometheus module version:
#   ${WMCO_CACHE:-$HOME/.cache/wmco-rs}/tools/promtool/<version>/promtool
# Go's module and build caches are the control plane's (go/mod, go/build; see ../go-build.sh). Only ./cmd/promtool is built, with
# upstream's build tag `remove_all_sd` (no service-discovery plugins: the tests check rules, never a scrape config).
# Skips all work when the binary was built from the current go.mod and go.sum. Prints the binary's path last.
set -euo pipefail

started=$(date +%s)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}

# shellcheck source=../go-build.sh
source "$here/../go-build.sh"
version=$(module_version github.com/prometheus/prometheus "$here/go.mod")
binary="$cache/tools/promtool/$version/promtool"
stamp_value=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)

if is_current "$binary" "$stamp_value"; then
    echo "promtool $version already built (0 s)" >&2
    echo "$binary"
    exit 0
fi

echo "building promtool $version ($(go version))" >&2
go_build_into "$binary" "$stamp_value" "$here" -tags remove_all_sd \
    -ldflags="-s -w -X github.com/prometheus/common/version.Version=$version" github.com/prometheus/prometheus/cmd/promtool
echo "promtool $version built in $(($(date +%s) - started)) s" >&2
echo "$binary"
