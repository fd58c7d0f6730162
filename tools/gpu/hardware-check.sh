#!/usr/bin/env bash
# Runs the GPU apps on a real CUDA device and compares them with their CPU runs (docs/gpu.md,
# "What has run on GPU hardware"). Meant for a machine with a GPU but without our build
# dependencies: build here, then pack the binaries and the shared libraries they need with
#   tools/gpu/pack-hardware-check.sh build/bin .gpucheck
# and on the GPU machine run
#   tools/gpu/hardware-check.sh .gpucheck OUTDIR
# Every check prints PASS or FAIL on one line of OUTDIR/summary.txt; the commands' own output
# goes to OUTDIR/log.txt. Exit status: the number of failed checks (0: all passed).
set -u
pack=${1:-.gpucheck}
out=${2:-/tmp/gpucheck}
mkdir -p "$out"
bin=$pack/bin
libs=$pack/lib:$pack/lib/nccl
# Open MPI's libraries from the pack only where the machine has none (its mpirun needs its own).
ldconfig -p | grep -q "libmpi.so.40 " || libs=$libs:$pack/lib/mpi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary=$out/summary.txt
log=$out/log.txt
: >"$summary"
: >"$log"
failed=0
say() { echo "$*" | tee -a "$summary"; }
pass() { say "PASS $*"; }
fail() {
  say "FAIL $*"
  failed=$((failed + 1))
}

# run LABEL SECONDS CMD...: the command's output in $last (and in the log).
run() {
  local label=$1 secs=$2
  shift 2
  echo "=== $label: $*" >>"$log"
  last=$(timeout "$secs" "$@" 2>&1)
  local rc=$?
  echo "$last" >>"$log"
  echo "=== rc=$rc" >>"$log"
  return $rc
}
field() { echo "$last" | grep -o "$1=[^ ]*" | tail -1; }

say "# $(date -u +%FT%TZ) $(uname -m) $(nvidia-smi -L 2>/dev/null | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$summary" 2>&1
missing=$(LD_LIBRARY_PATH=$LD_LIBRARY_PATH ldd "$bin"/* 2>/dev/null | grep "not found" | sort -u)
[ -z "$missing" ] || say "missing libraries: $missing"

# check_app NAME "ARGS" "MODES" "GPU COUNTS": the CPU run's checksum, then each mode and GPU
# count on the CUDA backend must give it, with kernels launched (and graphs when manual).
check_app() {
  local name=$1 args=$2 modes=$3 counts=$4
  [ -x "$bin/$name" ] || {
    fail "$name: not packed"
    return
  }
  # shellcheck disable=SC2086
  if ! run "$name cpu" 120 "$bin/$name" $args --trace none -ll:cpu 1; then
    fail "$name cpu run: $(echo "$last" | tail -2 | tr '\n' ' ')"
    return
  fi
  local want
  want=$(field checksum)
  say "     $name cpu: $want $(field verified)"
  for mode in $modes; do
    for gpus in $counts; do
      for graphs in 1 0; do
        [ "$graphs" = 0 ] && [ "$mode" != manual ] && continue
        local what="$name $args --trace $mode -ll:gpu $gpus -lg:gpu_graphs $graphs"
        # shellcheck disable=SC2086
        run "$what" 40 "$bin/$name" $args --trace "$mode" -ll:cpu 1 -ll:gpu "$gpus" \
          -ll:gpu_backend cuda -lg:gpu_graphs "$graphs"
        local rc=$?
        if [ $rc = 124 ]; then  # a hang: the rest of this app would hang too
          fail "$what: timed out (the rest of $name skipped): $(echo "$last" | tail -3 | tr '\n' ' ')"
          return
        elif [ $rc != 0 ]; then
          fail "$what: rc=$rc $(echo "$last" | tail -3 | tr '\n' ' ')"
          continue
        fi
        local got counters
        got=$(field checksum)
        counters="$(field gpu_kernels) $(field gpu_graph_launches) $(field gpu_copies)"
        if [ "$got" != "$want" ] || [ "$(field verified)" != verified=1 ]; then
          fail "$what: $got $(field verified) (cpu $want) $counters"
        elif [ "$(field gpu_kernels)" = gpu_kernels=0 ] && [ "$(field gpu_graph_launches)" = gpu_graph_launches=0 ]; then
          fail "$what: no kernels and no graphs ran: $counters"
        else
          pass "$what: $got $counters"
        fi
      done
    done
  done
}

# HW_CHECK_ONLY_NCCL=1 (tools/gpu/nccl-check.sh alone): the NCCL checks only.
if [ -z "${HW_CHECK_ONLY_NCCL:-}" ]; then
check_app stencil "-nx 97 -ny 131 -px 2 -py 3 -iters 30" "none manual auto" "1 4"
check_app jacobi2d "-n 96 -px 2 -py 2 -iters 20" "none manual auto" "1 4"
check_app jacobi "-n 64 -iters 10 -tiles 4" "none manual auto" "1 4"
check_app cfd "-nx 16 -ny 16 -nit 10 -tol 0.01 -tiles 2" "none auto" "1"

# Zero-copy memory (pinned, mapped host memory) on the CUDA backend: every stencil instance
# there (-zc), CPU and GPU tasks in place, no copies between memory kinds.
zc="-nx 97 -ny 131 -px 2 -py 3 -iters 30"
# shellcheck disable=SC2086
if run "zc cpu" 60 "$bin/stencil" $zc --trace none -ll:cpu 1; then
  want=$(field checksum)
  for mode in none manual auto; do
    what="stencil $zc --trace $mode -ll:gpu 2 -ll:zsize 16 -zc"
    # shellcheck disable=SC2086
    if run "$what" 40 "$bin/stencil" $zc --trace $mode -ll:cpu 1 -ll:gpu 2 -ll:zsize 16 -zc \
      -ll:gpu_backend cuda && [ "$(field checksum)" = "$want" ] &&
      [ "$(field gpu_copies)" = gpu_copies=0 ]; then
      pass "$what: $want $(field gpu_kernels) $(field gpu_graph_launches) $(field gpu_copies)"
    else
      fail "$what: $(field checksum) (cpu $want) $(field gpu_copies) $(echo "$last" | tail -2 | tr '\n' ' ')"
    fi
  done
else
  fail "stencil $zc cpu run: $(echo "$last" | tail -2 | tr '\n' ' ')"
fi

# The device interface under compute-sanitizer (out-of-bounds and misaligned accesses, API
# errors), when the machine has it.
if command -v compute-sanitizer >/dev/null; then
  if run "sanitizer" 180 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/stencil" \
    -nx 64 -ny 48 -px 2 -py 2 -iters 6 --trace manual -ll:cpu 1 -ll:gpu 2 -ll:gpu_backend cuda; then
    pass "compute-sanitizer memcheck stencil -ll:gpu 2 --trace manual: $(echo "$last" | grep -o 'ERROR SUMMARY.*')"
  else
    fail "compute-sanitizer memcheck: $(echo "$last" | grep -m3 -E 'ERROR|Invalid|error' | tr '\n' ' ')"
  fi
fi

# A larger stencil on one GPU and on the machine's CPUs: same checksum, and the times.
big="-nx 4096 -ny 4096 -px 2 -py 2 -iters 50 --trace manual"
cores=$(nproc)
# shellcheck disable=SC2086
if run "big cpu" 120 "$bin/stencil" $big -ll:cpu "$((cores > 2 ? cores - 2 : 1))" &&
  want=$(field checksum) && cpu_time=$(field time_s) &&
  run "big gpu" 120 "$bin/stencil" $big -ll:cpu 1 -ll:gpu 1 -ll:fsize 2048 -ll:gpu_backend cuda; then
  if [ "$(field checksum)" = "$want" ]; then
    pass "stencil $big: $want; cpu ($((cores > 2 ? cores - 2 : 1)) cores) $cpu_time, gpu $(field time_s) $(field gpu_graph_launches)"
  else
    fail "stencil $big: gpu $(field checksum) vs cpu $want"
  fi
else
  fail "stencil $big: $(echo "$last" | tail -3 | tr '\n' ' ')"
fi

# Untraced stencil on 4 GPU processors of the device (halo copies between framebuffers): early
# starts through stream waits against waiting for completions, alternated, same checksum.
early_args="-nx 1024 -ny 1024 -px 2 -py 2 -iters 300 --trace none -ll:cpu 1 -ll:gpu 4 -ll:gpu_backend cuda"
times=""
sums=""
for rep in 1 2 3; do
  for early in 1 0; do
    # shellcheck disable=SC2086
    if run "early $early" 60 "$bin/stencil" $early_args -lg:gpu_early $early; then
      times="$times early$early=$(field time_s | cut -d= -f2)"
      sums="$sums $(field checksum)"
    else
      fail "stencil $early_args -lg:gpu_early $early: $(echo "$last" | tail -3 | tr '\n' ' ')"
    fi
  done
done
if [ "$(echo "$sums" | tr ' ' '\n' | sort -u | grep -c .)" = 1 ]; then
  pass "stencil $early_args, -lg:gpu_early 1/0 alternated:$times"
else
  fail "stencil $early_args: checksums differ between -lg:gpu_early 1 and 0:$sums"
fi

# Two ranks, one GPU each (data between ranks staged through host memory), where the machine
# has Open MPI.
if command -v mpirun >/dev/null && ldconfig -p | grep -q "libmpi.so.40 "; then
  # (1-d and 2-d tiles: the second sends column halos, strided rows, both ways.)
  for margs in "-nx 96 -ny 80 -px 4 -py 1 -iters 24 -ll:cpu 1" "-nx 97 -ny 131 -px 2 -py 3 -iters 30 -ll:cpu 1"; do
    # shellcheck disable=SC2086
    run "mpi cpu" 60 "$bin/stencil" $margs --trace none
    want=$(field checksum)
    for mode in none manual auto; do
      # shellcheck disable=SC2086
      if run "mpi $mode" 90 mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x LD_LIBRARY_PATH "$bin/stencil" $margs --trace $mode -ll:gpu 1 -ll:gpu_backend cuda &&
        [ "$(field checksum)" = "$want" ]; then
        pass "mpirun -np 2 stencil $margs --trace $mode -ll:gpu 1: $want $(field gpu_copies)"
      else
        fail "mpirun -np 2 stencil $margs --trace $mode -ll:gpu 1: $(field checksum) vs $want $(echo "$last" | tail -3 | tr '\n' ' ')"
      fi
    done
  done
else
  say "     (no Open MPI here: the two-rank GPU run is skipped)"
fi

fi

# Copies between the ranks' framebuffers over NCCL (-ll:nccl): tools/gpu/nccl-check.sh, with
# this script's helpers and counters.
# shellcheck source=tools/gpu/nccl-check.sh
. "$(dirname "$0")/nccl-check.sh"

# Launch costs on the device (RESULT lines of bench_gpu), when packed: completions through the
# completion queues (the default), then through CUDA host functions.
if [ -x "$bin/bench_gpu" ] && [ -z "${HW_CHECK_ONLY_NCCL:-}" ]; then
  for how in queues host_functions; do
    if REPRISE_CUDA_COMPLETIONS=$how run "bench_gpu $how" 180 "$bin/bench_gpu" -backend cuda \
      -reps 3 -kernels 100000 -iters 1000; then
      echo "$last" | grep RESULT | sed "s/^RESULT /RESULT completions=$how /" >>"$summary"
    else
      fail "bench_gpu ($how): $(echo "$last" | tail -3 | tr '\n' ' ')"
    fi
  done
fi
say "# failed checks: $failed"
exit "$failed"
