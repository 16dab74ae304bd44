/*
 * sgemm_warptile.cu — a warp-tiled fp32 SGEMM written for Argus's build
 * fidelity test (tests/ptx/test_build_fidelity.c), in the style of the
 * register-heavy hand-tuned CUDA SGEMMs: each CTA computes a BM x BN tile of
 * C = alpha * A * B + beta * C (row-major, M, N, K multiples of the tiles),
 * staging BK-wide slices of A (transposed) and B in shared memory; each warp
 * owns a WM x WN sub-tile, computed as WMI x WNI iterations of TM x TN
 * per-thread register tiles. 128 threads, __launch_bounds__(128): ptxas
 * gives it 196 registers whole-program and 254 as relocatable code, so how
 * it is compiled decides its occupancy.
 * Compiled only (never run) by the tests.
 */
#include "argus/region.cuh"

#define BM 128
#define BN 128
#define BK 16
#define WM 64
#define WN 64
#define WNI 4
#define TM 8
#define TN 4
#define NTHREADS 128

#define WMI ((WM * WN) / (32 * TM * TN * WNI)) /* 2 */
#define WSUBM (WM / WMI)                      /* 32 */
#define WSUBN (WN / WNI)                      /* 16 */

/* launch bounds take precedence over -maxrregcount: the capped build
 * (sgemm_maxrreg.json) leaves them out */
#ifdef SGEMM_NO_BOUNDS
#define SGEMM_BOUNDS
#else
#define SGEMM_BOUNDS __launch_bounds__(NTHREADS)
#endif

extern "C" __global__ void SGEMM_BOUNDS
    sgemm_warptile(int M, int N, int K, float alpha, const float *__restrict__ A,
                   const float *__restrict__ B, float beta, float *__restrict__ C) {
  __shared__ float As[BK * BM]; /* A^T: As[k][m] */
  __shared__ float Bs[BK * BN];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
  const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
  const float *a = A + (size_t)blockIdx.y * BM * K;
  const float *b = B + (size_t)blockIdx.x * BN;
  float *c = C + (size_t)(blockIdx.y * BM + wrow * WM) * N + blockIdx.x * BN + wcol * WN;
  /* loaders: float4 per thread per step */
  const int ar = threadIdx.x / (BK / 4), ac = threadIdx.x % (BK / 4);
  const int br = threadIdx.x / (BN / 4), bc = threadIdx.x % (BN / 4);
  const int astride = NTHREADS * 4 / BK, bstride = NTHREADS * 4 / BN;

  float acc[WMI * TM * WNI * TN] = {0.f};
  float rm[WMI * TM], rn[WNI * TN];

  for (int k0 = 0; k0 < K; k0 += BK) {
    ARGUS_BEGIN_AT(load, k0);
    for (int o = 0; o + astride <= BM; o += astride) {
      float4 t = *reinterpret_cast<const float4 *>(&a[(size_t)(ar + o) * K + ac * 4]);
      As[(ac * 4 + 0) * BM + ar + o] = t.x;
      As[(ac * 4 + 1) * BM + ar + o] = t.y;
      As[(ac * 4 + 2) * BM + ar + o] = t.z;
      As[(ac * 4 + 3) * BM + ar + o] = t.w;
    }
    for (int o = 0; o + bstride <= BK; o += bstride)
      *reinterpret_cast<float4 *>(&Bs[(br + o) * BN + bc * 4]) =
          *reinterpret_cast<const float4 *>(&b[(size_t)(br + o) * N + bc * 4]);
    __syncthreads();
    ARGUS_END(load);
    ARGUS_BEGIN_AT(compute, k0);
#pragma unroll
    for (int k = 0; k < BK; k++) {
#pragma unroll
      for (int i = 0; i < WMI; i++)
#pragma unroll
        for (int m = 0; m < TM; m++)
          rm[i * TM + m] = As[k * BM + wrow * WM + i * WSUBM + trow * TM + m];
#pragma unroll
      for (int j = 0; j < WNI; j++)
#pragma unroll
        for (int n = 0; n < TN; n++)
          rn[j * TN + n] = Bs[k * BN + wcol * WN + j * WSUBN + tcol * TN + n];
#pragma unroll
      for (int i = 0; i < WMI; i++)
#pragma unroll
        for (int j = 0; j < WNI; j++)
#pragma unroll
          for (int m = 0; m < TM; m++)
#pragma unroll
            for (int n = 0; n < TN; n++)
              acc[(i * TM + m) * (WNI * TN) + j * TN + n] += rm[i * TM + m] * rn[j * TN + n];
    }
    __syncthreads();
    ARGUS_END(compute);
    a += BK;
    b += (size_t)BK * N;
  }
  ARGUS_BEGIN(epilogue);
#pragma unroll
  for (int i = 0; i < WMI; i++)
#pragma unroll
    for (int j = 0; j < WNI; j++)
#pragma unroll
      for (int m = 0; m < TM; m++) {
        float *p = c + (size_t)(i * WSUBM + trow * TM + m) * N + j * WSUBN + tcol * TN;
        float4 t = *reinterpret_cast<float4 *>(p);
        const float *r = &acc[(i * TM + m) * (WNI * TN) + j * TN];
        t.x = alpha * r[0] + beta * t.x;
        t.y = alpha * r[1] + beta * t.y;
        t.z = alpha * r[2] + beta * t.z;
        t.w = alpha * r[3] + beta * t.w;
        *reinterpret_cast<float4 *>(p) = t;
      }
  ARGUS_END(epilogue);
}
