#!/usr/bin/env bash
# Builds the unit tests and the stencil with AddressSanitizer+UBSan and with ThreadSanitizer
# (build-asan/, build-tsan/) and runs them. Not part of CI (too slow for the 30-minute budget
# on 2 cores); run it before landing concurrency changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
for kind in address thread; do
  dir=build-${kind/address/asan}
  dir=${dir/thread/tsan}
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPRISE_SANITIZE=$kind \
        -DREPRISE_CUDA=OFF > /dev/null
  cmake --build "$dir" -j "$(nproc)" --target unit_tests stencil
  echo "== $kind: unit tests"
  "$dir/bin/unit_tests" --gtest_brief=1
  echo "== $kind: stencil"
  "$dir/bin/stencil" -nx 100 -ny 90 -px 3 -py 2 -iters 300 -ll:cpu 2 -ll:util 2
done
