#pragma once
// GPU discovery. Built with CUDA when REPRISE_CUDA finds a toolkit; reports no device otherwise.
namespace reprise::cuda {

bool built_with_cuda();
// Number of CUDA devices visible to this process (0 without CUDA or without a GPU).
int device_count();

}  // namespace reprise::cuda
