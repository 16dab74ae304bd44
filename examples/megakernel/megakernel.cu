/*
 * megakernel.cu - one persistent kernel per decode step of a Llama-style
 * model (TinyLlama-1.1B shapes; docs/megakernel.md).
 *
 * The host builds the step's tile DAG once (mk_model.c: mk_dag_build): tasks
 * in a topological order, each waiting on one global counter and signalling
 * one. One CTA per SM runs the core loop: the scheduler takes the next task
 * from a global queue (an atomic counter over the task list; the next index
 * is fetched while the current task runs), waits until the task's counter is
 * complete, dispatches it to its operator, and signals. Because tasks are
 * taken in topological order, every task waited for has been taken by a CTA
 * that is running, so the loop cannot deadlock. The last CTA to leave zeroes
 * the counters and the queue for the next launch.
 *
 * Data written by another CTA in this launch is read through L2 (__ldcg):
 * L1 is not coherent between SMs. Weights and the KV cache of earlier steps
 * are read-only for the launch.
 *
 * Regions (docs/megakernel.md, "Regions"): core_loop, scheduler, dispatch,
 * one per operator (embed, qkv, attention, wo, gate_up, down, logits,
 * sample), rope, kv_update, scores, values and combine inside attention, and
 * the helpers shared by several operators: stage and rmsnorm (stage_input:
 * qkv, gate_up, logits; wo and down stage without the norm), gemv (gemv_rows:
 * every GEMV operator), signal (signal_done). The helpers are inlined (traced
 * variants probe markers in kernels only), so their regions appear under each
 * operator that calls them.
 */
#include "argus/region.cuh"
#include "mk_device.cuh"

#define NWARPS (MK_THREADS / 32)

struct __align__(16) mk_smem {
  union {
    float in[MK_MAX_K]; /* the staged GEMV input (of the operator and layer `staged`) */
    struct {            /* attention: the chunk's keys and values, bf16, 8 per uint4 */
      uint4 k[MK_ATTN_CHUNK * MK_HEAD_DIM / 8]; /* row j's 16-byte piece c at j * 8 + (c ^ (j & 7)) */
      uint4 v[MK_ATTN_CHUNK * MK_HEAD_DIM / 8]; /* row-major */
    } kv;
    float ml[MK_MAX_CHUNKS * MK_MAX_QPG * 2]; /* combine: each chunk's (max, sum), then its factor */
  } u;
  float out[MK_MAX_TILE_ROWS];     /* a tile's results */
  float red[NWARPS];
  float q[MK_MAX_QPG * MK_HEAD_DIM]; /* attention: roped, scaled queries */
  float sc[MK_MAX_QPG * MK_ATTN_CHUNK]; /* scores, then probabilities */
  float m[MK_MAX_QPG], l[MK_MAX_QPG];
  int next[2]; /* the task index taken ahead, by the parity of the loop's iteration */
  int last;
  int staged;  /* the (operator, layer) whose input u.in holds (stage_key), -1: none */
};

/* 8 bf16 (u) times 8 floats (a, b) */
__device__ __forceinline__ float dot8(uint4 u, float4 a, float4 b) {
  float s = __uint_as_float(u.x << 16) * a.x + __uint_as_float(u.x & 0xffff0000u) * a.y;
  s += __uint_as_float(u.y << 16) * a.z + __uint_as_float(u.y & 0xffff0000u) * a.w;
  s += __uint_as_float(u.z << 16) * b.x + __uint_as_float(u.z & 0xffff0000u) * b.y;
  s += __uint_as_float(u.w << 16) * b.z + __uint_as_float(u.w & 0xffff0000u) * b.w;
  return s;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float block_sum(float v, float *red) {
  v = warp_sum(v);
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    red[w] = v;
  __syncthreads();
  float t = lane < NWARPS ? red[lane] : 0.0f;
  t = warp_sum(t);
  __syncthreads();
  return t;
}

/* the warp's argmax of (v, i), ties to the lower index: lane 0's result is the warp's */
__device__ __forceinline__ void warp_argmax(float &v, int &i) {
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, v, o);
    int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (ov > v || (ov == v && oi < i)) {
      v = ov;
      i = oi;
    }
  }
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/* the key of an operator's input in a layer (mk_smem.staged) */
__device__ __forceinline__ int stage_key(int op, int layer) { return layer * MK_OP_COUNT + op; }

/* Stages K floats of src (written in this launch) into sm->u.in; with norm,
 * as RMSNorm(src) * norm. Shared by qkv, gate_up, logits (with the norm) and
 * wo, down (without). An operator's input does not change while its tiles
 * run (the tiles that write it wait for all of them), so when the CTA's
 * previous GEMV tile was of the same operator and layer (key), the staged
 * input is still there and is used as it is. */
__device__ __forceinline__ void stage_input(const float *src, int K, const uint16_t *norm,
                                         float eps, int key, mk_smem *sm) {
  if (sm->staged == key)
    return; /* the same value in every thread: read after the loop's barrier */
  ARGUS_BEGIN(stage);
  float ss = 0.0f;
  for (int k = threadIdx.x; k < K; k += MK_THREADS) {
    float v = mk_ldcg(src + k);
    sm->u.in[k] = v;
    ss += v * v;
  }
  ARGUS_END(stage);
  if (norm) {
    ARGUS_BEGIN(rmsnorm);
    float tot = block_sum(ss, sm->red);
    float r = rsqrtf(tot / (float)K + eps);
    for (int k = threadIdx.x; k < K; k += MK_THREADS)
      sm->u.in[k] = sm->u.in[k] * r * mk_bf(norm[k]);
    ARGUS_END(rmsnorm);
  }
  __syncthreads();
  if (threadIdx.x == 0) /* read again only after the next task's barriers */
    sm->staged = key;
}

/* sm->out[i] = W_i . sm->u.in for n0 rows of W0 then n1 rows of W1 (K inputs,
 * row-major bf16). A warp per row, 8 bf16 per lane per load. */
__device__ __forceinline__ void gemv_rows(const uint16_t *W0, int n0, const uint16_t *W1, int n1,
                                       int K, mk_smem *sm) {
  ARGUS_BEGIN(gemv);
  int w = threadIdx.x / 32, lane = threadIdx.x % 32, k8 = K / 8;
  for (int i = w; i < n0 + n1; i += NWARPS) {
    const uint4 *row = (const uint4 *)(i < n0 ? W0 + (size_t)i * K : W1 + (size_t)(i - n0) * K);
    float acc = 0.0f;
#pragma unroll 4
    for (int j = lane; j < k8; j += 32) {
      const float4 *x = (const float4 *)(sm->u.in + 8 * j);
      acc += dot8(__ldg(row + j), x[0], x[1]);
    }
    acc = warp_sum(acc);
    if (lane == 0)
      sm->out[i] = acc;
  }
  ARGUS_END(gemv);
  __syncthreads();
}

/* the task is done: its writes are made visible, then its counter counts it */
__device__ __forceinline__ void signal_done(unsigned *ctr) {
  ARGUS_BEGIN(signal);
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(ctr, 1u);
  }
  ARGUS_END(signal);
}

__device__ __forceinline__ const uint16_t *W(const mk_params &p, uint64_t off) {
  return (const uint16_t *)p.w + off;
}

/* elems bf16 from p into L2, a 128-byte line per thread and instruction
 * (prefetch.global.L2: no register waits for it) */
__device__ __forceinline__ void prefetch_l2(const uint16_t *p, size_t elems) {
  const char *c = (const char *)p;
  for (size_t o = (size_t)threadIdx.x * 128, n = elems * 2; o < n; o += (size_t)MK_THREADS * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + o));
}

/* A GEMV task's weights depend on nothing: with p.prefetch, every thread
 * starts its share of the task's weight lines towards L2 before the CTA
 * waits for the task's inputs (and stages them), so HBM streams while it
 * waits. Off by default (docs/megakernel.md, "Optimizations"). */
__device__ __forceinline__ void prefetch_task(const mk_params &p, const mk_task &t) {
  const size_t lw = p.L.layer_stride * (size_t)t.layer, H = p.c.hidden, F = p.c.ffn;
  switch (t.op) {
  case MK_OP_QKV:
    prefetch_l2(W(p, lw + p.L.layer0.wqkv) + t.a * H, t.b * H);
    break;
  case MK_OP_WO:
    prefetch_l2(W(p, lw + p.L.layer0.wo) + t.a * H, t.b * H);
    break;
  case MK_OP_GATEUP:
    prefetch_l2(W(p, lw + p.L.layer0.w_gate) + t.a * H, t.b * H);
    prefetch_l2(W(p, lw + p.L.layer0.w_up) + t.a * H, t.b * H);
    break;
  case MK_OP_DOWN:
    prefetch_l2(W(p, lw + p.L.layer0.w_down) + t.a * F, t.b * F);
    break;
  case MK_OP_LOGITS:
    prefetch_l2(W(p, p.L.lm_head) + t.a * H, t.b * H);
    break;
  default:
    break;
  }
}

/* element d of key row j in sm->u.kv.k, as bf16 (the 16-byte pieces of a
 * row are XOR-swizzled by j & 7, so that 8 threads reading the same piece of
 * 8 consecutive rows hit different banks) */
__device__ __forceinline__ int kv_kidx(int j, int d) {
  return (j * 8 + ((d >> 3) ^ (j & 7))) * 8 + (d & 7);
}

/* attention for KV head g over positions [ch * CHUNK, ...) up to p.pos: the
 * chunk's softmax partials; the chunk holding p.pos also writes that
 * position's key and value into the cache. The chunk's keys and values are
 * first copied into shared memory (16-byte loads, all in flight at once);
 * scores and values then read only shared memory. The last chunk of the head
 * to finish combines the partials into attn and signals the layer's
 * attention counter. */
__device__ __forceinline__ void op_attention(const mk_params &p, const mk_task &t, mk_smem *sm) {
  ARGUS_BEGIN(attention);
  const int qpg = p.c.n_heads / p.c.n_kv_heads, g = t.a, ch = t.b, tid = threadIdx.x;
  const int H = p.c.hidden, D = MK_HEAD_DIM, w = tid / 32, lane = tid % 32;
  const float *qkv = (const float *)p.qkv;
  const int p0 = ch * p.chunk, jp = p.pos - p0; /* jp: the new position's row, if in the chunk */
  int np = p.pos + 1 - p0;
  np = np < 0 ? 0 : (np > p.chunk ? p.chunk : np);
  const size_t cbase = ((size_t)t.layer * p.c.n_kv_heads + g) * p.max_pos * D;
  uint16_t *kc = (uint16_t *)p.kcache + cbase, *vc = (uint16_t *)p.vcache + cbase;
  uint16_t *ks = (uint16_t *)sm->u.kv.k, *vs = (uint16_t *)sm->u.kv.v;
  if (tid == 0)
    sm->staged = -1; /* u.in is overwritten */
  ARGUS_BEGIN(rope);
  for (int e = tid; e < qpg * (D / 2); e += MK_THREADS) {
    int h = e / (D / 2), i = e % (D / 2);
    const float *q = qkv + (size_t)(g * qpg + h) * D;
    float c, s, a = mk_ldcg(q + i), b = mk_ldcg(q + i + D / 2);
    mk_rope_cs(i, p.pos, p.c.rope_theta, &c, &s);
    sm->q[h * D + i] = (a * c - b * s) * 0.125f;
    sm->q[h * D + i + D / 2] = (b * c + a * s) * 0.125f;
  }
  ARGUS_END(rope);
  ARGUS_BEGIN(kv_load);
  { /* the rows of earlier steps (written before this launch) */
    const uint4 *gk = (const uint4 *)(kc + (size_t)p0 * D), *gv = (const uint4 *)(vc + (size_t)p0 * D);
    for (int e = tid; e < np * (D / 8); e += MK_THREADS) {
      int j = e / (D / 8), c = e % (D / 8);
      if (j == jp)
        continue;
      sm->u.kv.k[j * 8 + (c ^ (j & 7))] = __ldg(gk + e);
      sm->u.kv.v[e] = __ldg(gv + e);
    }
  }
  ARGUS_END(kv_load);
  if (jp >= 0 && jp < np) {
    ARGUS_BEGIN(kv_update);
    if (tid < D / 2) {
      const float *k = qkv + H + (size_t)g * D, *v = qkv + H + (size_t)p.c.n_kv_heads * D + g * D;
      float c, s, a = mk_ldcg(k + tid), b = mk_ldcg(k + tid + D / 2);
      mk_rope_cs(tid, p.pos, p.c.rope_theta, &c, &s);
      uint16_t ka = mk_bf16(a * c - b * s), kb = mk_bf16(b * c + a * s);
      uint16_t va = mk_bf16(mk_ldcg(v + tid)), vb = mk_bf16(mk_ldcg(v + tid + D / 2));
      kc[(size_t)p.pos * D + tid] = ka;
      kc[(size_t)p.pos * D + tid + D / 2] = kb;
      vc[(size_t)p.pos * D + tid] = va;
      vc[(size_t)p.pos * D + tid + D / 2] = vb;
      ks[kv_kidx(jp, tid)] = ka;
      ks[kv_kidx(jp, tid + D / 2)] = kb;
      vs[jp * D + tid] = va;
      vs[jp * D + tid + D / 2] = vb;
    }
    ARGUS_END(kv_update);
  }
  __syncthreads();
  ARGUS_BEGIN(scores);
  /* a thread per (head, position): a 64-long dot product from shared memory */
  for (int e = tid; e < qpg * np; e += MK_THREADS) {
    int h = e / np, j = e - h * np;
    const float4 *q = (const float4 *)(sm->q + h * D);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < D / 8; c++)
      s += dot8(sm->u.kv.k[j * 8 + (c ^ (j & 7))], q[2 * c], q[2 * c + 1]);
    sm->sc[h * MK_ATTN_CHUNK + j] = s;
  }
  __syncthreads();
  /* a warp per head: the chunk's max and sum of exponentials */
  for (int h = w; h < qpg; h += NWARPS) {
    float m = -INFINITY;
    for (int j = lane; j < np; j += 32)
      m = fmaxf(m, sm->sc[h * MK_ATTN_CHUNK + j]);
#pragma unroll
    for (int o = 16; o; o >>= 1)
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    for (int j = lane; j < np; j += 32) {
      float e = expf(sm->sc[h * MK_ATTN_CHUNK + j] - m);
      sm->sc[h * MK_ATTN_CHUNK + j] = e;
      l += e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      sm->m[h] = m;
      sm->l[h] = l;
    }
  }
  __syncthreads();
  ARGUS_END(scores);
  ARGUS_BEGIN(values);
  float *po = (float *)p.part_o, *pml = (float *)p.part_ml;
  for (int e = tid; e < qpg * D; e += MK_THREADS) {
    int h = e / D, d = e % D;
    const float *pr = sm->sc + h * MK_ATTN_CHUNK;
    float o = 0.0f;
#pragma unroll 8
    for (int j = 0; j < np; j++)
      o += pr[j] * mk_bf(vs[j * D + d]);
    size_t slot = ((size_t)g * p.nchunks + ch) * qpg + h;
    po[slot * D + d] = o;
    if (d == 0) {
      pml[slot * 2] = sm->m[h];
      pml[slot * 2 + 1] = sm->l[h];
    }
  }
  ARGUS_END(values);
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    unsigned *arr = (unsigned *)p.counters + mk_ctr_arrive(&p.c, t.layer, g);
    sm->last = atomicAdd(arr, 1u) == (unsigned)(p.nchunks - 1);
  }
  __syncthreads();
  if (sm->last) {
    ARGUS_BEGIN(combine);
    __threadfence();
    /* every chunk's (max, sum) at once, then a warp per head turns them into
     * the chunk's factor exp(m_c - M) / L (0 for a chunk past the position) */
    const int nml = p.nchunks * qpg * 2;
    float *ml = sm->u.ml;
    for (int e = tid; e < nml; e += MK_THREADS)
      ml[e] = mk_ldcg(pml + (size_t)g * nml + e);
    __syncthreads();
    for (int h = w; h < qpg; h += NWARPS) {
      float M = -INFINITY, L = 0.0f;
      for (int c2 = lane; c2 < p.nchunks; c2 += 32)
        M = fmaxf(M, ml[(c2 * qpg + h) * 2]);
#pragma unroll
      for (int o = 16; o; o >>= 1)
        M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
      for (int c2 = lane; c2 < p.nchunks; c2 += 32) {
        float lc = ml[(c2 * qpg + h) * 2 + 1];
        float f = lc == 0.0f ? 0.0f : expf(ml[(c2 * qpg + h) * 2] - M);
        ml[(c2 * qpg + h) * 2] = f;
        L += lc * f;
      }
      L = warp_sum(L);
      for (int c2 = lane; c2 < p.nchunks; c2 += 32)
        ml[(c2 * qpg + h) * 2] /= L;
    }
    __syncthreads();
    float *attn = (float *)p.attn;
    for (int e = tid; e < qpg * D; e += MK_THREADS) {
      int h = e / D, d = e % D;
      float O = 0.0f;
#pragma unroll 4
      for (int c2 = 0; c2 < p.nchunks; c2++)
        O += mk_ldcg(po + (((size_t)g * p.nchunks + c2) * qpg + h) * D + d) * ml[(c2 * qpg + h) * 2];
      attn[(size_t)(g * qpg + h) * D + d] = O;
    }
    ARGUS_END(combine);
    signal_done((unsigned *)p.counters + mk_ctr_attn(&p.c, t.layer));
  }
  ARGUS_END(attention);
}

extern "C" __global__ void __launch_bounds__(MK_THREADS, 1) mk_decode_step(const mk_params p) {
  __shared__ mk_smem sm;
  unsigned *queue = (unsigned *)p.queue, *ctr = (unsigned *)p.counters;
  const mk_task *tasks = (const mk_task *)p.tasks;
  const int tid = threadIdx.x, H = p.c.hidden, F = p.c.ffn;
  float *x = (float *)p.x;
  ARGUS_BEGIN(core_loop);
  if (tid == 0) {
    sm.next[0] = (int)atomicAdd(queue, 1u);
    sm.staged = -1; /* shared memory is not cleared between launches */
  }
  /* sm.next[0] is written. Inside the loop one barrier per task suffices (the
   * barrier counts by region showed two, docs/megakernel.md row 14): sm.next[it & 1]
   * was written by thread 0 before the barrier below in the iteration before, and no
   * thread writes shared memory for task `it` before that barrier, which every thread
   * reaches only after it is done with task it - 1 */
  __syncthreads();
  for (int it = 0;; it++) {
    ARGUS_BEGIN(scheduler);
    const int idx = sm.next[it & 1];
    mk_task t = {0, 0, 0, 0, -1, 0, -1, 0};
    if (idx < p.ntasks) {
      t = tasks[idx];
      if (p.prefetch) {
        ARGUS_BEGIN(prefetch);
        prefetch_task(p, t);
        ARGUS_END(prefetch);
      }
      if (tid == 0) {
        /* one ahead, into the other slot (the others read this iteration's):
         * safe, tasks are taken in DAG order */
        sm.next[(it + 1) & 1] = (int)atomicAdd(queue, 1u);
        if (t.wait >= 0)
          while (ld_acquire(ctr + t.wait) < (unsigned)t.wait_target)
            __nanosleep(20);
      }
      __syncthreads();
    }
    ARGUS_END(scheduler);
    if (idx >= p.ntasks)
      break;
    ARGUS_BEGIN(dispatch);
    const size_t lw = p.L.layer_stride * (size_t)t.layer;
    switch (t.op) {
    case MK_OP_EMBED: {
      ARGUS_BEGIN(embed);
      int tok = ((const int *)p.tokens)[p.step];
      for (int i = t.a + tid; i < t.a + t.b; i += MK_THREADS)
        x[i] = mk_bf(W(p, p.L.embed)[(size_t)tok * H + i]);
      ARGUS_END(embed);
      break;
    }
    case MK_OP_QKV: {
      ARGUS_BEGIN(qkv);
      stage_input(x, H, W(p, lw + p.L.layer0.attn_norm), p.c.rms_eps, stage_key(t.op, t.layer), &sm);
      gemv_rows(W(p, lw + p.L.layer0.wqkv) + (size_t)t.a * H, t.b, NULL, 0, H, &sm);
      if (tid < t.b)
        ((float *)p.qkv)[t.a + tid] = sm.out[tid];
      ARGUS_END(qkv);
      break;
    }
    case MK_OP_ATTN:
      op_attention(p, t, &sm);
      break;
    case MK_OP_WO: {
      ARGUS_BEGIN(wo);
      stage_input((const float *)p.attn, H, NULL, 0.0f, stage_key(t.op, t.layer), &sm);
      gemv_rows(W(p, lw + p.L.layer0.wo) + (size_t)t.a * H, t.b, NULL, 0, H, &sm);
      if (tid < t.b)
        x[t.a + tid] = mk_ldcg(x + t.a + tid) + sm.out[tid];
      ARGUS_END(wo);
      break;
    }
    case MK_OP_GATEUP: {
      ARGUS_BEGIN(gate_up);
      stage_input(x, H, W(p, lw + p.L.layer0.mlp_norm), p.c.rms_eps, stage_key(t.op, t.layer), &sm);
      gemv_rows(W(p, lw + p.L.layer0.w_gate) + (size_t)t.a * H, t.b,
                W(p, lw + p.L.layer0.w_up) + (size_t)t.a * H, t.b, H, &sm);
      if (tid < t.b)
        ((float *)p.h)[t.a + tid] = mk_silu(sm.out[tid]) * sm.out[t.b + tid];
      ARGUS_END(gate_up);
      break;
    }
    case MK_OP_DOWN: {
      ARGUS_BEGIN(down);
      stage_input((const float *)p.h, F, NULL, 0.0f, stage_key(t.op, t.layer), &sm);
      gemv_rows(W(p, lw + p.L.layer0.w_down) + (size_t)t.a * F, t.b, NULL, 0, F, &sm);
      if (tid < t.b)
        x[t.a + tid] = mk_ldcg(x + t.a + tid) + sm.out[tid];
      ARGUS_END(down);
      break;
    }
    case MK_OP_LOGITS: {
      ARGUS_BEGIN(logits);
      stage_input(x, H, W(p, p.L.final_norm), p.c.rms_eps, stage_key(t.op, t.layer), &sm);
      gemv_rows(W(p, p.L.lm_head) + (size_t)t.a * H, t.b, NULL, 0, H, &sm);
      if (tid < t.b)
        ((float *)p.logits)[t.a + tid] = sm.out[tid];
      if (tid < 32) { /* the tile's argmax; ties to the lower index */
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = tid; i < t.b; i += 32)
          if (sm.out[i] > bv) {
            bv = sm.out[i];
            bi = t.a + i;
          }
        warp_argmax(bv, bi);
        if (tid == 0) {
          ((float *)p.amax_v)[t.tile] = bv;
          ((int *)p.amax_i)[t.tile] = bi;
        }
      }
      ARGUS_END(logits);
      break;
    }
    case MK_OP_SAMPLE: {
      ARGUS_BEGIN(sample);
      if (tid < 32) {
        int n = p.logits_tiles;
        float bv = -INFINITY;
        int bi = 0x7fffffff;
        for (int i = tid; i < n; i += 32) {
          float v = mk_ldcg((const float *)p.amax_v + i);
          int vi = __ldcg((const int *)p.amax_i + i);
          if (v > bv || (v == bv && vi < bi)) {
            bv = v;
            bi = vi;
          }
        }
        warp_argmax(bv, bi);
        if (tid == 0)
          ((int *)p.tokens)[p.step + 1] = bi;
      }
      ARGUS_END(sample);
      break;
    }
    default:
      break;
    }
    if (t.signal >= 0 && t.op != MK_OP_ATTN)
      signal_done(ctr + t.signal);
    ARGUS_END(dispatch);
  }
  ARGUS_END(core_loop);
  /* the last CTA out resets the queue and the counters for the next launch:
   * every other CTA has finished its tasks and stopped fetching */
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    if (atomicAdd(queue + 1, 1u) == gridDim.x - 1) {
      for (int i = 0; i < p.ncounters; i++)
        ctr[i] = 0;
      queue[0] = 0;
      queue[1] = 0;
      __threadfence();
    }
  }
}
