/*
 * overlap_gemm.cu - the compute half of the all-gather + GEMM pipeline
 * (examples/overlap, docs/comm.md): C[rows x n] = A[rows x k] * B[k x n],
 * FP32, row major, on the rows of one all-gathered chunk. Persistent: the
 * grid is the SMs the communication leaves (the harness launches
 * SMs - R CTAs), each CTA walks 64 x 64 output tiles. Regions: `tile` per
 * output tile, inside it `mainloop` (the k loop through shared memory) and
 * `epilogue` (the stores). Each output element is summed in the same
 * order whatever the chunking, so the pipelined and the reference results
 * are bit-identical (the harness checks that).
 */
#include "argus/region.cuh"

#define TM 64
#define TN 64
#define TK 16

extern "C" __global__ void __launch_bounds__(256)
    overlap_gemm(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                 int rows, int n, int k) {
  __shared__ float As[TK][TM + 4];
  __shared__ float Bs[TK][TN];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int tiles_n = n / TN, tiles = (rows / TM) * tiles_n;
#pragma unroll 1
  for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
    ARGUS_BEGIN(tile);
    const int m0 = (t / tiles_n) * TM, n0 = (t % tiles_n) * TN;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
        acc[i][j] = 0.f;
    ARGUS_BEGIN(mainloop);
#pragma unroll 1
    for (int k0 = 0; k0 < k; k0 += TK) {
      /* 64 x 16 of A and 16 x 64 of B: 4 elements each per thread */
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int idx = threadIdx.x + e * 256;
        int ar = idx / TK, ac = idx % TK;
        As[ac][ar] = A[(size_t)(m0 + ar) * k + k0 + ac];
        int br = idx / TN, bc = idx % TN;
        Bs[br][bc] = B[(size_t)(k0 + br) * n + n0 + bc];
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < TK; kk++) {
        float a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
          a[i] = As[kk][ty * 4 + i], b[i] = Bs[kk][tx * 4 + i];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    ARGUS_END(mainloop);
    ARGUS_BEGIN(epilogue);
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
        C[(size_t)(m0 + ty * 4 + i) * n + n0 + tx * 4 + j] = acc[i][j];
    ARGUS_END(epilogue);
    ARGUS_END(tile);
  }
}
