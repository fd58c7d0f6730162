#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite. Under CI (CI=true, or with
# REPRISE_SANITIZE_PASS=1) it first builds the unit tests, the random-program runner and the
# misuse catalogue with AddressSanitizer+UBSan and runs them (tools/setup/sanitize.sh address,
# with about half its random seeds).
set -euo pipefail
here="$(dirname "$0")"
bash "$here/install-deps.sh"
bash "$here/build.sh"
if [ "${CI:-}" = true ] || [ "${REPRISE_SANITIZE_PASS:-0}" = 1 ]; then
  REPRISE_SANITIZE_QUICK=1 bash "$here/sanitize.sh" address
fi
cd "$here/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure -j 2 --timeout 600
