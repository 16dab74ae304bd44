/*
 * reference.cu - the megakernel's reference: one plain kernel per operator
 * of a decode step (embedding, RMSNorm, GEMV, RoPE + KV-cache update,
 * attention, SiLU-gating, argmax), launched one after another with the same
 * weights; plus the seeded initialisation of weights and of the KV cache's
 * context (mk_model.h's generator, on the device).
 *
 * Written for clarity, not speed: a warp per GEMV row reading bf16 pairs, a
 * block per query head over the whole context. fp32 everywhere but the
 * weights and the KV cache (bf16), as in the megakernel.
 */
#include "mk_device.cuh"

extern "C" __global__ void mk_fill(uint16_t *w, uint64_t count, uint64_t seed, uint64_t stream,
                                   float base, float scale) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count;
       i += (uint64_t)gridDim.x * blockDim.x)
    w[i] = mk_draw_value(base, scale, mk_uniform(seed, stream, i));
}

/* the context: positions below ctx of every layer's K and V, unit variance
 * (stream 1000 + 2 layer (+1 for V), element (kv head * max_pos + pos) * 64 + d) */
extern "C" __global__ void mk_fill_cache(uint16_t *kc, uint16_t *vc, int layers, int kvh,
                                         int max_pos, int ctx, uint64_t seed) {
  uint64_t per = (uint64_t)kvh * max_pos * MK_HEAD_DIM, n = per * layers;
  for (uint64_t e = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; e < n;
       e += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t l = e / per, i = e % per;
    int pos = (int)((i / MK_HEAD_DIM) % max_pos);
    if (pos >= ctx) {
      kc[e] = 0;
      vc[e] = 0;
      continue;
    }
    kc[e] = mk_draw_value(0.0f, 1.7320508f, mk_uniform(seed, 1000 + 2 * l, i));
    vc[e] = mk_draw_value(0.0f, 1.7320508f, mk_uniform(seed, 1001 + 2 * l, i));
  }
}

extern "C" __global__ void ref_embed(const uint16_t *emb, const int *tokens, int step, float *x,
                                     int H) {
  int tok = tokens[step];
  for (int i = threadIdx.x; i < H; i += blockDim.x)
    x[i] = mk_bf(emb[(size_t)tok * H + i]);
}

/* out = RMSNorm(x) * w; one block of 1024 threads */
extern "C" __global__ void ref_rmsnorm(const float *x, const uint16_t *w, float *out, int K,
                                       float eps) {
  __shared__ float part[1024];
  float s = 0.0f;
  for (int k = threadIdx.x; k < K; k += blockDim.x)
    s += x[k] * x[k];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int o = blockDim.x / 2; o; o >>= 1) {
    if ((int)threadIdx.x < o)
      part[threadIdx.x] += part[threadIdx.x + o];
    __syncthreads();
  }
  float r = rsqrtf(part[0] / (float)K + eps);
  for (int k = threadIdx.x; k < K; k += blockDim.x)
    out[k] = x[k] * r * mk_bf(w[k]);
}

/* y[n] (+)= W[n] . in, a warp per row; accumulate: y += instead of y = */
extern "C" __global__ void ref_gemv(const uint16_t *W, const float *in, float *y, int N, int K,
                                    int accumulate) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N)
    return;
  const uint32_t *r = (const uint32_t *)(W + (size_t)row * K);
  float acc = 0.0f;
  for (int j = lane; j < K / 2; j += 32) {
    uint32_t u = r[j];
    acc += __uint_as_float(u << 16) * in[2 * j] + __uint_as_float(u & 0xffff0000u) * in[2 * j + 1];
  }
  for (int o = 16; o; o >>= 1)
    acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0)
    y[row] = accumulate ? y[row] + acc : acc;
}

/* RoPE on q (in place) and k; k and v into the cache at pos. A block per head
 * (n_heads + n_kv_heads blocks), 32 threads. */
extern "C" __global__ void ref_rope_kv(float *qkv, uint16_t *kc, uint16_t *vc, int layer,
                                       int nh, int kvh, int max_pos, int pos, float theta) {
  int h = blockIdx.x, i = threadIdx.x, D = MK_HEAD_DIM;
  float *v = qkv + (size_t)(h + kvh) * D; /* for h >= nh: the V of KV head h - nh */
  float *x = qkv + (size_t)h * D;
  float c, s, a = x[i], b = x[i + D / 2];
  mk_rope_cs(i, pos, theta, &c, &s);
  float ra = a * c - b * s, rb = b * c + a * s;
  if (h < nh) {
    x[i] = ra;
    x[i + D / 2] = rb;
    return;
  }
  size_t at = (((size_t)layer * kvh + (h - nh)) * max_pos + pos) * D;
  kc[at + i] = mk_bf16(ra);
  kc[at + i + D / 2] = mk_bf16(rb);
  vc[at + i] = mk_bf16(v[i]);
  vc[at + i + D / 2] = mk_bf16(v[i + D / 2]);
}

/* out[h] = softmax(q_h . K / 8) V over positions 0..pos; a block per query
 * head, scores in dynamic shared memory ((pos + 1) floats) */
extern "C" __global__ void ref_attention(const float *qkv, const uint16_t *kc, const uint16_t *vc,
                                         float *out, int layer, int nh, int kvh, int max_pos,
                                         int pos) {
  extern __shared__ float sc[];
  __shared__ float red[1024];
  int h = blockIdx.x, g = h / (nh / kvh), D = MK_HEAD_DIM, n = pos + 1;
  const float *q = qkv + (size_t)h * D;
  size_t base = ((size_t)layer * kvh + g) * max_pos * D;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    float s = 0.0f;
    for (int d = 0; d < D; d++)
      s += q[d] * mk_bf(kc[base + (size_t)j * D + d]);
    sc[j] = s * 0.125f;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x)
    m = fmaxf(m, sc[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int o = blockDim.x / 2; o; o >>= 1) {
    if ((int)threadIdx.x < o)
      red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float l = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    sc[j] = expf(sc[j] - m);
    l += sc[j];
  }
  red[threadIdx.x] = l;
  __syncthreads();
  for (int o = blockDim.x / 2; o; o >>= 1) {
    if ((int)threadIdx.x < o)
      red[threadIdx.x] += red[threadIdx.x + o];
    __syncthreads();
  }
  l = red[0];
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.0f;
    for (int j = 0; j < n; j++)
      o += sc[j] * mk_bf(vc[base + (size_t)j * D + d]);
    out[(size_t)h * D + d] = o / l;
  }
}

extern "C" __global__ void ref_silu_mul(const float *gate, const float *up, float *h, int F) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < F)
    h[i] = mk_silu(gate[i]) * up[i];
}

/* tokens[step + 1] = argmax(logits), ties to the lower index; one block of 1024 */
extern "C" __global__ void ref_argmax(const float *logits, int V, int *tokens, int step) {
  __shared__ float bv[1024];
  __shared__ int bi[1024];
  float v = -INFINITY;
  int i0 = 0x7fffffff;
  for (int i = threadIdx.x; i < V; i += blockDim.x)
    if (logits[i] > v) {
      v = logits[i];
      i0 = i;
    }
  bv[threadIdx.x] = v;
  bi[threadIdx.x] = i0;
  __syncthreads();
  for (int o = blockDim.x / 2; o; o >>= 1) {
    if ((int)threadIdx.x < o) {
      float ov = bv[threadIdx.x + o];
      int oi = bi[threadIdx.x + o];
      if (ov > bv[threadIdx.x] || (ov == bv[threadIdx.x] && oi < bi[threadIdx.x])) {
        bv[threadIdx.x] = ov;
        bi[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    tokens[step + 1] = bi[0];
}
