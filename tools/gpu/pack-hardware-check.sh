#!/usr/bin/env bash
# Packs the GPU apps and the shared libraries they load (all but the C library's own) into one
# folder for tools/gpu/hardware-check.sh on a GPU machine without our build dependencies
# (their glibc must be at least ours: Debian 12 builds run on Ubuntu 24.04).
#   tools/gpu/pack-hardware-check.sh BUILD_BIN_DIR PACK_DIR
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
du -sh "$pack"
