#!/usr/bin/env bash
# Installs Reprise's build and test dependencies from Debian 12 packages (as root, or via sudo).
set -euo pipefail
packages=(
  cmake g++ make ninja-build pkg-config
  libtbb-dev libhwloc-dev libfmt-dev
  libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin
  python3-matplotlib
  libsimgrid-dev
  valgrind  # (the measurement scripts' instruction counts: callgrind)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
