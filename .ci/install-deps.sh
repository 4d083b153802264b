#!/usr/bin/env bash
# Installs the Debian packages the build and tests need, only when something is missing (apt-get update first then).
set -euo pipefail

# wine64 and gcc-mingw-w64-x86-64: the real payload's smoke run and the e2e scenario with the real kubelet run the
# Windows binaries under Wine 8.0, with a bcryptprimitives.dll stub built by MinGW (see payload/README.md).
# ca-certificates: the operator image's CA bundle. skopeo, umoci and runc: the image's e2e test unpacks and runs it
# with tools that did not build it, the way a kubelet's container runtime would; podman and containerd (its ctr):
# the same test loads the oci-archive into both.
packages=(pkg-config libssl-dev zlib1g-dev openssh-server openssh-client wine64 gcc-mingw-w64-x86-64
    ca-certificates skopeo umoci runc podman containerd)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "all packages present: ${packages[*]}"
fi
