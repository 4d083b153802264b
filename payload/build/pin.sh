#!/usr/bin/env bash
# Pins one upstream Go module of the Windows payload: writes payload/build/<dir>/go.mod and go.sum, a wrapper module
# whose `tool` lines are the upstream main packages, whose only direct requirement is the upstream module at the
# exact version (so the build list is upstream's own), and which carries upstream's non-local `replace` lines (Go
# ignores replacements of dependencies, so upstream's binaries are built with them only if the wrapper repeats them).
#
#   bash payload/build/pin.sh DIR MODULE VERSION PACKAGE...
#   bash payload/build/pin.sh containerd github.com/containerd/containerd v1.7.27 ./cmd/containerd
#
# Local replacements (`=> ./path`) point into nested modules the module zip does not contain; the caller lists them
# in LOCAL_REPLACEMENTS as `module@version` pairs taken from the proxy instead (Kubernetes' staging modules).
# Modules whose checksum the checksum database cannot serve here go in GONOSUMDB; go.sum then pins their hash.
# See payload/README.md.
set -euo pipefail

if [[ $# -lt 4 ]]; then
    echo "usage: pin.sh DIR MODULE VERSION PACKAGE..." >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$1 module=$2 version=$3
shift 3
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build"

upstream_dir=$(go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
if [[ -z "$upstream_dir" ]]; then
    echo "pin.sh: the module proxy did not serve $module@$version" >&2
    exit 1
fi

target="$here/$dir"
mkdir -p "$target"
cd "$target"
rm -f go.mod go.sum
# Upstream's go.sum is the authority for the hashes of upstream's build list; go.sum lines it lacks come from the
# checksum database.
cp "$upstream_dir/go.sum" go.sum
chmod u+w go.sum
{
    echo "// Pins $module $version for the Windows payload (written by payload/build/pin.sh; see payload/README.md)."
    echo "module wmco-rs.payload/$dir"
    echo
    sed -n 's/^go \(.*\)$/go \1/p' "$upstream_dir/go.mod" | head -1
} > go.mod
# Upstream's replace lines, single-line and block form, without those pointing at local directories.
awk '
    /^replace[ \t]*\($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block && /=>/ { print "replace " $0; next }
    /^replace / { print }
' "$upstream_dir/go.mod" | grep -v '=>[[:space:]]*\.\.\?/' >> go.mod || true
for pair in ${LOCAL_REPLACEMENTS:-}; do
    go mod edit -require="$pair"
done
go get "$module@$version" >/dev/null
for package in "$@"; do
    go get -tool "$module/${package#./}@$version" >/dev/null
done
go mod tidy >/dev/null
echo "pinned $module $version in payload/build/$dir ($(grep -c . go.sum) go.sum lines)"
