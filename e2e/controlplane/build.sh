#!/usr/bin/env bash
# Builds the e2e control-plane binaries (kube-apiserver, kube-controller-manager, kubectl, etcd) from the
# pinned Go modules in this directory into a cache outside the clone:
#   ${WMCO_CACHE:-$HOME/.cache/wmco-rs}/controlplane/<k8s-version>/bin/
# Go's module and build caches live under the same root (go/mod, go/build) so CI can keep them.
# Skips all work when the binaries are present and were built from the current go.mod/go.sum files.
# Prints the binary directory and the elapsed time. See docs/testing.md.
set -euo pipefail

started=$(date +%s)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}

# shellcheck source=../go-build.sh
source "$here/../go-build.sh"
k8s_version=$(module_version k8s.io/kubernetes "$here/go.mod")
bin_dir="$cache/controlplane/$k8s_version/bin"
binaries=(kube-apiserver kube-controller-manager kubectl etcd)

# The stamp names the exact module files the binaries were built from; a change to either module rebuilds.
stamp_value=$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/go.mod" "$here/etcd/go.sum" "$here/etcd/main.go" \
    | sha256sum | cut -d' ' -f1)
stamp_file="$bin_dir/.built-from"

all_present() {
    local name
    for name in "${binaries[@]}"; do
        [[ -x "$bin_dir/$name" ]] || return 1
    done
    [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp_value" ]]
}

if all_present; then
    echo "control plane $k8s_version already built in $bin_dir (0 s)"
    exit 0
fi

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export GOMODCACHE="$cache/go/mod"
export GOCACHE="$cache/go/build"
mkdir -p "$bin_dir" "$GOMODCACHE" "$GOCACHE"
rm -f "$stamp_file"

major_minor=${k8s_version#v}
git_major=${major_minor%%.*}
git_minor=${major_minor#*.}
git_minor=${git_minor%%.*}
version_pkg=k8s.io/component-base/version
ldflags="-s -w -X $version_pkg.gitVersion=$k8s_version -X $version_pkg.gitMajor=$git_major"
ldflags+=" -X $version_pkg.gitMinor=$git_minor -X $version_pkg.gitTreeState=clean"

echo "building control plane $k8s_version into $bin_dir ($(go version))"

# Build to a temporary name in the same directory, then rename: an interrupted build never leaves a
# binary that looks complete.
build_one() {
    local module_dir=$1 package=$2 name=$3 flags=$4
    local step_started
    step_started=$(date +%s)
    (cd "$module_dir" && go build -trimpath -ldflags="$flags" -o "$bin_dir/.$name.partial" "$package")
    mv -f "$bin_dir/.$name.partial" "$bin_dir/$name"
    echo "  $name: $(($(date +%s) - step_started)) s"
}

build_one "$here" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$ldflags"
build_one "$here" k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$ldflags"
build_one "$here" k8s.io/kubernetes/cmd/kubectl kubectl "$ldflags"
build_one "$here/etcd" . etcd "-s -w"

echo "$stamp_value" > "$stamp_file"
echo "control plane $k8s_version built in $bin_dir in $(($(date +%s) - started)) s"
