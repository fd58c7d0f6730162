#!/usr/bin/env bash
# Builds the unit tests, the stencil, the random-program runner and the misuse catalogue with
# AddressSanitizer+UBSan and with ThreadSanitizer (build-asan/, build-tsan/) and runs them:
# the unit tests, the stencil, random traced programs on 3 memories (manual and automatic
# traces, failures inside traces), the same programs and the stencil under mpirun on 2 and 3
# ranks, and the single-process misuse cases. CI runs the address
# pass (tools/setup/test.sh) with about half the random seeds (REPRISE_SANITIZE_QUICK=1: the
# whole CI run must stay under 30 minutes on 2 cores); run the thread pass, with every seed,
# before landing concurrency changes. A sanitizer report fails the script.
#   bash tools/setup/sanitize.sh [address|thread]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/../.."
kinds=("${@:-address}")
[ $# -eq 0 ] && kinds=(address thread)
for kind in "${kinds[@]}"; do
  dir=build-${kind/address/asan}
  dir=${dir/thread/tsan}
  # The quick (CI) pass compiles at -O1 with line tables only (-g1): about 2.5x faster to
  # build than -O2 -g, which the build of this pass dominated; reports keep file:line.
  flags="-O2 -g -DNDEBUG"
  [ "${REPRISE_SANITIZE_QUICK:-0}" = 1 ] && flags="-O1 -g1 -DNDEBUG"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREPRISE_SANITIZE=$kind \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" \
        -DREPRISE_CUDA=OFF -DREPRISE_WERROR=ON > /dev/null
  cmake --build "$dir" -j "$(nproc)" --target unit_tests stencil random_programs misuse
  echo "== $kind: unit tests"
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  REPRISE_TRACE_SEEDS=6 "$dir/bin/unit_tests" --gtest_brief=1
  echo "== $kind: stencil"
  "$dir/bin/stencil" -nx 100 -ny 90 -px 3 -py 2 -iters 300 -ll:cpu 2 -ll:util 2
  echo "== $kind: random traced programs"
  r=("$dir/bin/random_programs" --mapper scatter --quiet --timeout 600)
  # Seeds per run: the full count, or about half of it in the quick (CI) pass.
  seeds() { echo "1:$(( ${REPRISE_SANITIZE_QUICK:-0} == 1 ? ($1 + 1) / 2 : $1 ))"; }
  "${r[@]}" --loops --seeds "$(seeds 60)" -ll:cpu 2 -ll:numa 3 -ll:util 2
  "${r[@]}" --iters 30 --traces auto --seeds "$(seeds 30)" -ll:cpu 2 -ll:numa 3
  "${r[@]}" --fail-in-trace --seeds "$(seeds 40)" -ll:cpu 2 -ll:numa 3
  # Eager launches beside a CPU worker, fills on the utility thread: the runtime leaves and
  # comes back to running alone thousands of times (-lg:alone; no reductions, one memory).
  "${r[@]}" --no-reductions --loops --seeds "$(seeds 60)" -ll:cpu 2 -ll:app_cpu 1 \
    -lg:inline_analysis -ll:keep_all_ns 50000000 -ll:util 2
  if command -v mpirun > /dev/null; then
    # Control replication: 2 and 3 ranks. Open MPI is not instrumented: its own lock orders
    # are suppressed for ThreadSanitizer and its allocations are not leak-checked.
    echo "== $kind: random programs and the stencil under mpirun"
    m=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0
       "TSAN_OPTIONS=halt_on_error=1 suppressions=$PWD/tools/setup/tsan-mpi.supp"
       timeout 900 mpirun --oversubscribe)
    "${m[@]}" -np 2 "${r[@]}" --loops --seeds "$(seeds 20)" -ll:cpu 1
    "${m[@]}" -np 3 "${r[@]}" --loops --seeds "$(seeds 12)" -ll:cpu 1 -ll:numa 2 -lg:shard_checks 1
    # Untraced, other shards' writes and contributions deferred (forced: on auto, a dense task is not).
    "${m[@]}" -np 3 "${r[@]}" --seeds "$(seeds 30)" -ll:cpu 1 -lg:defer_writes 1 -lg:defer_reductions 1
    "${m[@]}" -np 2 "$dir/bin/stencil" -nx 256 -ny 128 -px 4 -py 1 -iters 60 -ll:cpu 1 --trace auto \
      -lg:evtrace "$dir/evtrace.txt"
    # Copies between framebuffers over the device links (NCCL emulated on the host backend).
    for mode in none manual; do
      "${m[@]}" -np 2 "$dir/bin/stencil" -nx 97 -ny 131 -px 2 -py 3 -iters 12 -ll:cpu 1 \
        -ll:gpu 1 -ll:gpu_backend host -ll:nccl 1 --trace $mode
    done
  fi
  echo "== $kind: misuse catalogue (single process)"
  for c in $("$dir/bin/misuse" --list); do
    case $c in top_exit*|context_after_start) continue ;;  # exit paths: no sanitizer report
    esac
    flags=()
    [ "$c" = bounds_check ] && flags=(-lg:bounds_checks)
    [ "$c" = memory_full ] && flags=(-ll:csize 1)
    out=$(timeout 120 "$dir/bin/misuse" "$c" "${flags[@]}" 2>&1) || true
    if echo "$out" | grep -q "Sanitizer\|runtime error:"; then
      echo "$c: SANITIZER REPORT"; echo "$out"; exit 1
    fi
  done
  echo "== $kind: done"
done
