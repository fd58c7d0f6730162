#!/usr/bin/env bash
# Configures and builds Reprise (Release) into ./build. Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DREPRISE_WERROR=ON "$@"
cmake --build build -j "$jobs"
