#!/usr/bin/env bash
# Packs the GPU apps and the shared libraries they load (all but the C library's own) into one
# folder for tools/gpu/hardware-check.sh on a GPU machine without our build dependencies
# (their glibc must be at least ours: Debian 12 builds run on Ubuntu 24.04).
#   tools/gpu/pack-hardware-check.sh BUILD_BIN_DIR PACK_DIR [NCCL_LIBRARY]
# NCCL_LIBRARY (optional): an NCCL library for the -ll:nccl checks, packed as lib/nccl/
# (the toolkit's is ~200 MB for every architecture; one built for the GPU's alone is ~20 MB:
# NVIDIA/nccl at the toolkit's version, `make src.build NVCC_GENCODE=... ONLY_FUNCS=SendRecv`).
# With it, the NCCL probe (tools/gpu/nccl_pair_probe.cu) is built into bin/.
set -eu
from=$1
pack=$2
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib/mpi"
for exe in stencil jacobi2d jacobi cfd bench_gpu; do
  [ -x "$from/$exe" ] || continue
  cp "$from/$exe" "$pack/bin/"
  strip "$pack/bin/$exe"
done
ldd "$pack"/bin/* | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux*) ;;
    # Open MPI's own libraries: used only where the GPU machine has no Open MPI (its mpirun
    # needs its own).
    libmpi.so* | libopen-*.so* | libevent*.so*) cp -L "$lib" "$pack/lib/mpi/" ;;
    *) cp -L "$lib" "$pack/lib/" ;;
  esac
done
if [ -n "${3:-}" ]; then
  mkdir -p "$pack/lib/nccl"
  cp -L "$3" "$pack/lib/nccl/libnccl.so.2"
  here=$(cd "$(dirname "$0")" && pwd)
  # shellcheck disable=SC2046
  nvcc -O2 -std=c++17 $(mpicc --showme:compile) "$here/nccl_pair_probe.cu" \
    -o "$pack/bin/nccl_pair_probe" -L"$(dirname "$3")" -lnccl $(mpicc --showme:link)
fi
du -sh "$pack"
