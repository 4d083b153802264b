# Shared by the build scripts of the cached Go tools (e2e/controlplane/build.sh, e2e/bundle-validate/build.sh,
# e2e/promtool/build.sh); source it. Go's module and build caches are the control plane's (go/mod, go/build under the cache root).

# is_current BINARY STAMP_VALUE: the binary exists and its `.built-from` stamp (beside it) names the same inputs.
is_current() {
    local stamp_file
    stamp_file="$(dirname "$1")/.built-from"
    [[ -x "$1" && -f "$stamp_file" && "$(cat "$stamp_file")" == "$2" ]]
}

# go_build_into BINARY STAMP_VALUE MODULE_DIR GO_BUILD_ARGS...: builds with the machine's Go (GOTOOLCHAIN=local)
# under a temporary name, renames it (an interrupted build never leaves a binary that looks complete), then stamps.
go_build_into() {
    local binary=$1 stamp_value=$2 module_dir=$3
    shift 3
    local cache=${WMCO_CACHE:-$HOME/.cache/wmco-rs}
    export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build"
    mkdir -p "$(dirname "$binary")" "$GOMODCACHE" "$GOCACHE"
    rm -f "$(dirname "$binary")/.built-from"
    local partial
    partial="$(dirname "$binary")/.$(basename "$binary").partial"
    (cd "$module_dir" && go build -trimpath -o "$partial" "$@")
    mv -f "$partial" "$binary"
    echo "$stamp_value" > "$(dirname "$binary")/.built-from"
}

# module_version MODULE GO_MOD: prints the version GO_MOD requires of MODULE; exits 2 naming both when it requires
# none (`version=$(module_version …)` then stops the calling script under `set -e`).
module_version() {
    local version
    version=$(awk -v module="$1" '$1 == module && $2 ~ /^v/ { print $2; exit }' "$2")
    if [[ -z "$version" ]]; then
        echo "build.sh: no $1 requirement in $2" >&2
        exit 2
    fi
    echo "$version"
}
