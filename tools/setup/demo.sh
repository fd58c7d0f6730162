#!/usr/bin/env bash
# Installs dependencies, builds, and runs the main demo: the stencil app, printing its RESULT.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install-deps.sh"
bash "$here/build.sh"
cd "$here/../.."
./build/bin/stencil -nx 2048 -ny 2048 -px 4 -py 4 -iters 200 -warmup 100 -ll:cpu 2
