#pragma once
// What the stencil's CPU code and its GPU variants share. The GPU variants live in
// stencil_kernels.cu: compiled by nvcc when the build has CUDA (kernel::for_each becomes a
// CUDA kernel there), as C++ otherwise (a loop on the host device backend's stream).
#include <reprise/reprise.h>

namespace stencil {

using namespace reprise;

enum : TaskID { TID_INIT = 100, TID_STENCIL, TID_INCREMENT, TID_NORM, TID_CHECKSUM };
enum : FieldID { FID_IN = 0, FID_OUT = 1 };

constexpr double kCoefX = 1.0, kCoefY = 1.0;

struct StencilArgs {
  coord_t nx, ny;
  int radius;
};

void init_gpu(TaskContext& tc);
void stencil_gpu(TaskContext& tc);
void increment_gpu(TaskContext& tc);

}  // namespace stencil
