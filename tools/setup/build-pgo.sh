#!/usr/bin/env bash
# Optional: a profile-guided Release build (GCC's -fprofile-generate / -fprofile-use) into
# ./build-pgo. Where launch cost matters (fine-grained tasks, METG), it runs the launch path
# in fewer instructions and with its hot code together (docs/results.md: one core's untraced
# Task Bench timestep ~8% less wall time). The profile comes from the apps in every trace mode
# on one and two CPUs (stencil, jacobi, jacobi2d, cfd, circuit) — not from reprise-taskbench,
# so that Task Bench figures measure a build that never saw it. Tests are not built (the
# ordinary build is the one tested: tools/setup/test.sh). Extra arguments go to cmake.
#   bash tools/setup/build-pgo.sh        # then build-pgo/bin/...
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=$(nproc 2>/dev/null || echo 2)
dir=build-pgo
apps=(stencil jacobi jacobi2d cfd circuit reprise-taskbench)
configure() {
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREPRISE_BUILD_TESTS=OFF \
    -DREPRISE_WERROR=OFF "-DCMAKE_CXX_FLAGS=$1" "-DCMAKE_EXE_LINKER_FLAGS=$2" "${@:3}"
}
# 1. Instrumented (each object's counts go next to it: the second build, in the same folder,
#    finds them by the same paths). Atomic counter updates: the runtime is multi-threaded.
find "$dir" -name '*.gcda' -delete 2>/dev/null || true
configure "-fprofile-generate -fprofile-update=atomic" "-fprofile-generate" "$@"
cmake --build "$dir" -j "$jobs" --target "${apps[@]}"
# 2. Training: small runs of every app, each trace mode, one and two CPUs.
for cpus in 1 2; do
  for mode in none manual auto; do
    flags=(--trace "$mode" -ll:cpu "$cpus")
    "$dir/bin/stencil" -nx 256 -ny 256 -px 2 -py 2 -iters 300 "${flags[@]}" > /dev/null
    "$dir/bin/jacobi" -n 256 -iters 300 "${flags[@]}" > /dev/null
    "$dir/bin/jacobi2d" -n 128 -px 2 -py 2 -iters 300 "${flags[@]}" > /dev/null
    "$dir/bin/circuit" -l 100 -p 4 "${flags[@]}" > /dev/null
    [ "$mode" = manual ] || "$dir/bin/cfd" -nx 32 -ny 32 -max_steps 100 "${flags[@]}" > /dev/null
  done
done
# 3. Optimised with the counts. (-Wno-missing-profile: code the training never ran, e.g. GPU
#    paths, is built as usual.)
configure "-fprofile-use -fprofile-partial-training -Wno-missing-profile" "" "$@"
cmake --build "$dir" -j "$jobs" --target "${apps[@]}"
echo "build-pgo: ${apps[*]} built with the profile of $(find "$dir" -name '*.gcda' | wc -l) objects"
