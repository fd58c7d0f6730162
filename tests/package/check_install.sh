#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then builds the out-of-tree example against it
# twice, as an application outside this tree would: with CMake (find_package(Reprise)) and with
# a plain compiler command from pkg-config. Both must run and verify.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
config=$(find "$work/prefix" -name RepriseConfig.cmake)
pc=$(find "$work/prefix" -name reprise.pc)
test -n "$config" && test -n "$pc" && test -f "$work/prefix/include/reprise/reprise.h"
if ls "$work/prefix/include" | grep -v '^reprise$'; then
  echo "internal headers were installed" >&2
  exit 1
fi
cmake -S "$src/apps/examples/out_of_tree" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"
"$work/cmake-build/saxpy" -ll:cpu 2
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# shellcheck disable=SC2046
g++ -O1 "$src/apps/examples/out_of_tree/saxpy.cpp" -o "$work/saxpy-pc" \
    $(pkg-config --cflags --libs reprise)
"$work/saxpy-pc" -ll:cpu 2
