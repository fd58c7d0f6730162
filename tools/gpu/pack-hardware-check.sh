#!/usr/bin/env bash
# Packs the GPU apps and the shared libraries they load (all but the C library's own) into one
# folder for tools/gpu/hardware-check.sh on a GPU machine without our build dependencies.
#   tools/gpu/pack-hardware-check.sh BUILD_BIN_DIR PACK_DIR
set -eu
from=$1
pack=$2
rm -rf "$pack"
mkdir -p "$pack/bin" "$pack/lib"
for exe in stencil jacobi2d jacobi cfd bench_gpu; do
  [ -x "$from/$exe" ] || continue
  cp "$from/$exe" "$pack/bin/"
  strip "$pack/bin/$exe"
done
ldd "$pack"/bin/* | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux*) ;;
    *) cp -L "$lib" "$pack/lib/" ;;
  esac
done
du -sh "$pack"
