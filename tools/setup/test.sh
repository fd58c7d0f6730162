#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install-deps.sh"
bash "$here/build.sh"
cd "$here/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure -j 2 --timeout 600
