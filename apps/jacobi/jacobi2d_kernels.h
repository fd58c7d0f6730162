#pragma once
// What jacobi2d's CPU code and its GPU variants share. The GPU variants live in
// jacobi2d_kernels.cu: compiled by nvcc when the build has CUDA (kernel::for_each becomes a
// CUDA kernel there), as C++ otherwise (a loop on the host device backend's stream).
#include <reprise/reprise.h>

namespace jacobi2d {

using namespace reprise;

enum : TaskID { TID_INIT = 200, TID_SWEEP, TID_CHECKSUM };
enum : FieldID { FID_U = 0, FID_V = 1 };

struct SweepArgs {
  coord_t n;
  FieldID from, to;
};

void init_gpu(TaskContext& tc);
void sweep_gpu(TaskContext& tc);

}  // namespace jacobi2d
