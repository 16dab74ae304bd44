/*
 * overhead.cu - the tracing-overhead microbenchmark of the Argus paper:
 * 128 CTAs x 256 threads, each thread running 64 sequential occurrences of
 * the marked region `step`, each occurrence doing `inner` iterations of
 *   compute type: a dependent FP32 FMA chain, or
 *   memory type:  an indexed load followed by an FMA.
 * The whole sweep is one region `work` inside the kernel's root region.
 * The harness (harness.c) checks the result against a CPU reference.
 */
#include "argus/region.cuh"

#define OCCURRENCES 64

extern "C" __global__ void __launch_bounds__(256)
    overhead_compute(float *out, const float *seed, int inner) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float a = seed[tid];
  const float b = 1.0000001f, c = 0.5f;
  ARGUS_BEGIN(work);
#pragma unroll 1
  for (int occ = 0; occ < OCCURRENCES; occ++) {
    ARGUS_BEGIN_AT(step, occ);
#pragma unroll 1
    for (int j = 0; j < inner; j++)
      a = fmaf(a, b, c);
    ARGUS_END(step);
  }
  ARGUS_END(work);
  out[tid] = a;
}

/* `table` has `n` entries (a power of two); each load depends on the
 * previous FMA result only through the index sequence, so loads can overlap. */
extern "C" __global__ void __launch_bounds__(256)
    overhead_memory(float *out, const float *table, int n, int inner) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float a = 0.f;
  const float c = 0.5f;
  unsigned idx = (unsigned)tid * 2654435761u;
  ARGUS_BEGIN(work);
#pragma unroll 1
  for (int occ = 0; occ < OCCURRENCES; occ++) {
    ARGUS_BEGIN_AT(step, occ);
#pragma unroll 1
    for (int j = 0; j < inner; j++) {
      idx = idx * 1664525u + 1013904223u;
      float x = table[idx & (unsigned)(n - 1)];
      a = fmaf(a, x, c);
    }
    ARGUS_END(step);
  }
  ARGUS_END(work);
  out[tid] = a;
}
