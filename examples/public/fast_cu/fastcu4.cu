// The translation unit Argus builds for fast.cu's kernel 4 (TMA producer
// warpgroup, wgmma consumers, a 5-stage mbarrier ring). Written for Argus:
// what fast.cu's matmul.cu defines before it includes the kernels (a bf16
// name, CEIL_DIV, cudaCheck), then the kernel, upstream's
// (matmul_4.cuh, MIT), whose runKernel4 instantiates
// matmulKernel4<128, 128, 64, 256, 5>.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cassert>
#include <cstdio>
#include <cstdlib>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

static void check_cuda_at(cudaError_t e, const char *file, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "CUDA error at %s:%d: %s\n", file, line, cudaGetErrorString(e));
    std::exit(1);
  }
}
#define cudaCheck(err) (check_cuda_at((err), __FILE__, __LINE__))

#include "matmul_4.cuh"
