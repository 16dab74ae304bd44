// The translation unit Argus builds for SGEMM_CUDA's kernel 10 (warp tiling),
// at the configuration its runner uses on the H200 (examples/public/README.md).
// Written for Argus; the kernel is upstream's (10_kernel_warptiling.cuh, MIT).
#include "10_kernel_warptiling.cuh"

template __global__ void sgemmWarptiling<128, 128, 16, 64, 64, 4, 8, 4, 128>(int, int, int, float,
                                                                          float *, float *, float,
                                                                          float *);
