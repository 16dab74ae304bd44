/*
 * mk_device.cuh - device helpers shared by the megakernel and its reference
 * (the same math in both: RoPE angles, SiLU, bf16 loads), so the two differ
 * only in how the work is split and summed.
 */
#ifndef ARGUS_EXAMPLES_MK_DEVICE_CUH
#define ARGUS_EXAMPLES_MK_DEVICE_CUH

#include <stdint.h>

#include "mk_model.h"

/* the RoPE rotation of pair (i, i + 32) of a head at position pos (rotate_half, as Llama) */
__device__ __forceinline__ void mk_rope_cs(int i, int pos, float theta, float *c, float *s) {
  float inv = powf(theta, -(float)(2 * i) / (float)MK_HEAD_DIM);
  sincosf((float)pos * inv, s, c);
}

__device__ __forceinline__ float mk_silu(float g) { return g / (1.0f + expf(-g)); }

__device__ __forceinline__ float mk_bf(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

/* L2 loads for data another CTA wrote during this launch (L1 is not coherent) */
__device__ __forceinline__ float mk_ldcg(const float *p) { return __ldcg(p); }

#endif
