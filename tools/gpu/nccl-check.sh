# Sourced by tools/gpu/hardware-check.sh (its run/pass/fail/field helpers, $pack, $bin, $out):
# copies between the ranks' framebuffers over NCCL (-ll:nccl), where the machine has Open MPI
# and an NCCL library. Alone: tools/gpu/nccl-check.sh PACK OUTDIR (only these checks).
if [ -z "${summary:-}" ]; then
  HW_CHECK_ONLY_NCCL=1 exec bash "$(dirname "$0")/hardware-check.sh" "$@"
fi
# The NCCL library: the pack's lib/nccl, else the machine's. On a machine with one GPU the
# two ranks share it and pretend to be on two hosts (NCCL refuses two ranks of one host on one
# GPU): NCCL_HOSTID per rank, its socket transport over the loopback interface.
nccl_lib=""
[ -e "$pack/lib/nccl/libnccl.so.2" ] && nccl_lib=$(cd "$pack/lib/nccl" && pwd)/libnccl.so.2
[ -z "$nccl_lib" ] && ldconfig -p | grep -q "libnccl.so.2 " && nccl_lib=libnccl.so.2
if command -v mpirun >/dev/null && ldconfig -p | grep -q "libmpi.so.40 " && [ -n "$nccl_lib" ]; then
  ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  hostid=""
  [ "$ngpus" -lt 2 ] && hostid='NCCL_HOSTID=reprise-rank-$OMPI_COMM_WORLD_RANK'
  # per_rank CMD...: CMD on each of two ranks, with that rank's NCCL environment (a script,
  # so that `timeout` can run it).
  per_rank=$out/per_rank.sh
  cat >"$per_rank" <<EOS
#!/bin/sh
exec mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH \\
  -x REPRISE_NCCL_LIBRARY="$nccl_lib" -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 \\
  -x NCCL_DEBUG=WARN sh -c '$hostid CUDA_VISIBLE_DEVICES=\$((OMPI_COMM_WORLD_RANK % ${ngpus:-1})) exec "\$@"' rank "\$@"
EOS
  chmod +x "$per_rank"
  if [ -x "$pack/bin/nccl_pair_probe" ]; then
    if run "nccl probe" 120 "$per_rank" "$pack/bin/nccl_pair_probe" &&
      echo "$last" | grep -q "nccl_pair_probe ok"; then
      pass "nccl_pair_probe: two ranks exchange 8 MiB both ways over NCCL"
    else
      fail "nccl_pair_probe: $(echo "$last" | tail -4 | tr '\n' ' ')"
    fi
  fi
  for app in "jacobi2d -n 96 -px 2 -py 2 -iters 20" "stencil -nx 96 -ny 80 -px 4 -py 1 -iters 24" \
    "stencil -nx 97 -ny 131 -px 2 -py 3 -iters 30"; do
    # shellcheck disable=SC2086
    set -- $app
    name=$1
    shift
    run "nccl $name cpu" 60 "$bin/$name" "$@" --trace none -ll:cpu 1
    want=$(field checksum)
    for mode in none manual auto; do
      for nccl in 1 auto; do
        what="mpirun -np 2 $name $* --trace $mode -ll:gpu 1 -ll:nccl $nccl"
        run "$what" 40 "$per_rank" "$bin/$name" "$@" --trace "$mode" -ll:cpu 1 -ll:gpu 1 \
          -ll:gpu_backend cuda -ll:nccl "$nccl" -lg:stall_report 10
        rc=$?
        if [ $rc = 0 ] && [ "$(field checksum)" = "$want" ] &&
          [ "$(field gpu_link_copies)" != gpu_link_copies=0 ]; then
          pass "$what: $want $(field gpu_link_copies) $(field gpu_copies) $(field time_s)"
        elif [ $rc = 124 ]; then  # a hang: the rest of this app would hang too
          fail "$what: timed out (the rest of $name skipped): $(echo "$last" | tail -3 | tr '\n' ' ')"
          continue 3
        else
          fail "$what: rc=$rc $(field checksum) vs $want $(field gpu_link_copies) $(echo "$last" | tail -3 | tr '\n' ' ')"
        fi
      done
    done
  done
  # Without NCCL_HOSTID two ranks on one GPU cannot open NCCL: auto falls back to host staging.
  if [ "$ngpus" -lt 2 ]; then
    run "nccl fallback cpu" 60 "$bin/stencil" -nx 96 -ny 80 -px 4 -py 1 -iters 24 --trace none -ll:cpu 1
    want=$(field checksum)
    what="mpirun -np 2 stencil -ll:nccl auto, one GPU, no NCCL_HOSTID (falls back)"
    if run "$what" 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH \
      -x REPRISE_NCCL_LIBRARY="$nccl_lib" -x NCCL_SOCKET_IFNAME=lo "$bin/stencil" -nx 96 -ny 80 \
      -px 4 -py 1 -iters 24 --trace manual -ll:cpu 1 -ll:gpu 1 -ll:gpu_backend cuda -ll:nccl auto &&
      [ "$(field checksum)" = "$want" ] && [ "$(field gpu_link_copies)" = gpu_link_copies=0 ]; then
      pass "$what: $(field checksum) $(field gpu_link_copies)"
    else
      fail "$what: $(field checksum) $(echo "$last" | tail -3 | tr '\n' ' ')"
    fi
  fi
else
  say "     (no Open MPI or no NCCL library here: the NCCL checks are skipped)"
fi
