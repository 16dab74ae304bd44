/*
 * mk_model.h - the decode megakernel's model, shared by host C and CUDA:
 * the configuration (TinyLlama-1.1B by default), the flat bf16 weight
 * layout, the seeded generator of weights and of the KV cache's context,
 * the binary weight file (docs/megakernel.md, "Weight file"), and the tile
 * DAG of one decode step (tasks, their dependency counters).
 *
 * Everything here is plain data and pure functions: the host code (mk_model.c)
 * builds the DAG once per run and loads or generates the weights; the kernels
 * (megakernel.cu) read the same structs. Head dimension is fixed at 64 (the
 * kernels' attention is written for it); every other size is a field.
 */
#ifndef ARGUS_EXAMPLES_MK_MODEL_H
#define ARGUS_EXAMPLES_MK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define MK_HD __host__ __device__ __forceinline__
#else
#define MK_HD static inline
#endif

#define MK_HEAD_DIM 64
#define MK_MAX_K 8192      /* the longest GEMV input the kernels stage (ffn, hidden) */
#define MK_ATTN_CHUNK 128  /* the most positions per attention task (mk_dag.chunk) */
#define MK_MAX_CHUNKS 128  /* so at most 16384 positions */
#define MK_MAX_QPG 16      /* query heads per KV head */

/* the model's sizes; n_heads * head_dim == hidden */
typedef struct mk_config {
  int32_t hidden, layers, n_heads, n_kv_heads, head_dim, ffn, vocab;
  float rms_eps, rope_theta;
} mk_config;

/* Offsets (in bf16 elements) of every tensor in the flat weight array, in
 * file order: embed [vocab x hidden]; per layer attn_norm [hidden], wqkv
 * [(n_heads + 2 n_kv_heads) * head_dim x hidden] (q rows, then k, then v),
 * wo [hidden x hidden], mlp_norm [hidden], w_gate [ffn x hidden],
 * w_up [ffn x hidden], w_down [hidden x ffn]; final_norm [hidden];
 * lm_head [vocab x hidden]. Layer l's tensor is at layer0.X + l * layer_stride. */
typedef struct mk_layout {
  uint64_t embed;
  struct {
    uint64_t attn_norm, wqkv, wo, mlp_norm, w_gate, w_up, w_down;
  } layer0;
  uint64_t layer_stride, final_norm, lm_head, total;
} mk_layout;

/* operators of the DAG (mk_task.op) */
enum {
  MK_OP_EMBED = 0, /* x = embed[token] */
  MK_OP_QKV,       /* rmsnorm(x) -> rows of wqkv -> qkv scratch */
  MK_OP_ATTN,      /* (layer, kv head, chunk of positions): RoPE, KV-cache update, partial softmax */
  MK_OP_WO,        /* x[rows] += wo[rows] . attn */
  MK_OP_GATEUP,    /* rmsnorm(x) -> gate and up rows -> h = silu(g) * u */
  MK_OP_DOWN,      /* x[rows] += w_down[rows] . h */
  MK_OP_LOGITS,    /* rmsnorm(x) -> lm_head rows -> logits, the tile's argmax */
  MK_OP_SAMPLE,    /* greedy: argmax over the tiles' maxima -> next token */
  MK_OP_COUNT
};

/* One task: op on (layer, a, b), started when counter `wait` reaches
 * `wait_target`; adds 1 to `signal` when done (-1: none). For MK_OP_ATTN a is
 * the KV head and b the chunk; for GEMV tiles a is the first row (of the
 * output), b the number of rows and tile the tile's ordinal in its operator
 * (the logits tiles' argmax slot). */
typedef struct mk_task {
  int32_t op, layer, a, b;
  int32_t wait, wait_target, signal, tile;
} mk_task;

/* The persistent kernel's argument (one struct, by value): device addresses
 * as 64-bit integers so host C and CUDA agree on the layout. */
typedef struct mk_params {
  uint64_t w;           /* bf16 weights, mk_layout order */
  mk_layout L;
  mk_config c;
  uint64_t tasks;       /* mk_task[ntasks] */
  uint64_t counters;    /* uint32[ncounters], zero between steps */
  uint64_t queue;       /* uint32[2]: next task, CTAs finished; zero between steps */
  uint64_t x, qkv, attn, h, logits;   /* float scratch: hidden, qkv rows, hidden, ffn, vocab */
  uint64_t part_o, part_ml;           /* attention partials: [kv head][chunk][q head][64], [..][2] */
  uint64_t amax_v, amax_i;            /* the logits tiles' maxima (float, int32) */
  uint64_t kcache, vcache;            /* bf16 [layer][kv head][max_pos][64] */
  uint64_t tokens;                    /* int32: tokens[step] in, tokens[step + 1] out */
  int32_t ntasks, ncounters, nchunks, chunk, max_pos, step, pos;
  int32_t prefetch; /* 1: each task's weight lines into L2 before its wait (--prefetch; off: it measured slower) */
  int32_t logits_tiles; /* the argmax partials of the logits tiles (mk_dag.logits_tiles) */
} mk_params;

#define MK_THREADS 512 /* per CTA of the persistent kernel: 16 warps */

/* Output rows per GEMV tile of each operator (gateup: of gate, and as many of
 * up); the default is mk_tiles_default. A GEMV tile runs a warp per row, so
 * tiles of a multiple of 16 rows keep the 16 warps equally busy. */
typedef struct mk_tiles {
  int32_t qkv, wo, gateup, down, logits;
} mk_tiles;
#define MK_MAX_TILE_ROWS 256 /* the most output rows of one tile (gateup: 2 x gateup) */
/* The dynamic shared memory the harness gives mk_decode_step when the
 * module's kernel declares (almost) none statically: the weight-buffer
 * builds (docs/megakernel.md, "Optimizations", rows 10-12; commit 7c469ce)
 * keep their whole shared state (a 192 KB buffer for a GEMV tile's weights)
 * there. The build in the tree declares its 46 KB statically and gets none. */
#define MK_SMEM_BYTES (226 * 1024)

/* The DAG of one decode step for positions up to max_pos (exclusive): tasks
 * in a topological order (every task's producers come before it), and the
 * counters they signal. Counter c is complete when it reaches target[c].
 * Per layer: qkv, attn (one signal per KV head, by the last chunk to finish),
 * wo, gateup, down, and one arrival counter per KV head (the chunks of that
 * head). */
typedef struct mk_dag {
  mk_task *tasks;
  int ntasks;
  int32_t *target; /* per counter: how many signals complete it */
  int ncounters;
  int chunk;        /* positions per attention task: a multiple of 16, 16..MK_ATTN_CHUNK */
  int nchunks;      /* attention chunks per KV head */
  int logits_tiles; /* argmax partials written by the logits tiles */
  mk_tiles tiles;   /* the tiling the DAG was built with */
} mk_dag;

/* counter numbering (mk_dag): 0 embed; per layer 5 + n_kv_heads; then logits */
MK_HD int mk_ctr_layer(const mk_config *c, int layer) { return 1 + layer * (5 + c->n_kv_heads); }
MK_HD int mk_ctr_qkv(const mk_config *c, int l) { return mk_ctr_layer(c, l) + 0; }
MK_HD int mk_ctr_attn(const mk_config *c, int l) { return mk_ctr_layer(c, l) + 1; }
MK_HD int mk_ctr_wo(const mk_config *c, int l) { return mk_ctr_layer(c, l) + 2; }
MK_HD int mk_ctr_gateup(const mk_config *c, int l) { return mk_ctr_layer(c, l) + 3; }
MK_HD int mk_ctr_down(const mk_config *c, int l) { return mk_ctr_layer(c, l) + 4; }
MK_HD int mk_ctr_arrive(const mk_config *c, int l, int kvh) { return mk_ctr_layer(c, l) + 5 + kvh; }
MK_HD int mk_ctr_logits(const mk_config *c) { return mk_ctr_layer(c, c->layers); }

/* The seeded generator: a counter-based hash (splitmix64's finalizer), so
 * element i of stream `stream` is the same on the host and on the device,
 * in any order. Returns a float uniform in [-1, 1). */
MK_HD float mk_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (stream << 40) ^ i;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(int64_t)(z >> 40) * (1.0f / 8388608.0f) - 1.0f; /* 24 bits -> [-1, 1) */
}

/* float -> bf16 bits, round to nearest even (finite inputs) */
MK_HD uint16_t mk_bf16(float f) {
  union {
    float f;
    uint32_t u;
  } v;
  v.f = f;
  uint32_t r = v.u + 0x7FFFu + ((v.u >> 16) & 1u);
  return (uint16_t)(r >> 16);
}

MK_HD float mk_bf16_float(uint16_t b) {
  union {
    float f;
    uint32_t u;
  } v;
  v.u = (uint32_t)b << 16;
  return v.f;
}

/* How a seeded tensor is drawn: value = base + scale * uniform. A matrix with
 * K inputs has scale sqrt(3 / K) (unit variance of its outputs for unit
 * inputs), a norm weight 1 + 0.1 u, the embedding unit variance: activations
 * stay of order 1 through the 22 layers. `stream` numbers the tensor in file
 * order (embed 0, layer l's tensors 1 + 7 l ... 7 + 7 l, final norm, lm_head). */
/* the drawn value as bf16: the product is exact in double, so a fused and an
 * unfused multiply-add give the same sum, on the host and on the device */
MK_HD uint16_t mk_draw_value(float base, float scale, float u) {
  return mk_bf16((float)((double)base + (double)scale * (double)u));
}

typedef struct mk_draw {
  uint64_t offset, count, stream;
  float base, scale;
} mk_draw;

#ifndef __CUDACC__
#ifdef __cplusplus
extern "C" {
#endif

/* TinyLlama-1.1B's sizes (hidden 2048, 22 layers, 32/4 heads of 64, ffn 5632,
 * vocab 32000, eps 1e-5, RoPE theta 10000) */
mk_config mk_config_tinyllama(void);

/* 0 when the kernels can run c; else -1 with the reason in err */
int mk_config_check(const mk_config *c, char *err, size_t errlen);

/* the flat layout of c's weights */
mk_layout mk_layout_of(const mk_config *c);

/* The seeded tensors of c in file order: fills up to cap draws and returns
 * how many there are (2 + 7 layers + 2). */
int mk_draws(const mk_config *c, mk_draw *out, int cap);

/* Fills w[0 .. layout.total) with the seeded weights on the host (the device
 * does the same with mk_init; this is the tests' and --save-weights' copy). */
void mk_weights_generate(const mk_config *c, uint64_t seed, uint16_t *w);

/* The weight file (docs/megakernel.md): a 64-byte header (magic "ARGUSMK1",
 * version 1, the seven sizes as little-endian uint32, eps and theta as
 * float32, zero padding), then the bf16 tensors in layout order. */
#define MK_FILE_HEADER 64

/* Reads the header of `path` into *c and checks it (sizes the kernels can
 * run, the file's length equal to header + layout.total * 2). 0, or -1 with
 * the reason (what, where, what to do) in err. */
int mk_weights_read_header(const char *path, mk_config *c, char *err, size_t errlen);

/* Reads the whole file: *c and a malloc'ed copy of the weights (owned by the
 * caller; *w = NULL on failure). 0 or -1 with err. */
int mk_weights_load(const char *path, mk_config *c, uint16_t **w, char *err, size_t errlen);

/* Writes c and w (layout.total elements) as a weight file. 0 or -1 with err. */
int mk_weights_save(const char *path, const mk_config *c, const uint16_t *w, char *err,
                    size_t errlen);

/* the default tiling: qkv 32, wo 16, gate_up 16 (+ 16), down 16, logits 64 rows */
mk_tiles mk_tiles_default(void);

/* Builds the decode step's DAG for positions below max_pos (1 <= max_pos <=
 * MK_ATTN_CHUNK * MK_MAX_CHUNKS) with the default tiling. 0, or -1 with err
 * (d zeroed). */
int mk_dag_build(const mk_config *c, int max_pos, mk_dag *d, char *err, size_t errlen);

/* The same with the tiling t: every size at least 1, at most MK_MAX_TILE_ROWS
 * output rows per tile (2 x gateup for gate_up); else -1 with err. */
int mk_dag_build_tiles(const mk_config *c, int max_pos, const mk_tiles *t, mk_dag *d, char *err,
                       size_t errlen);
void mk_dag_release(mk_dag *d);

/* Checks the invariants the kernel relies on: every task waits on a counter
 * whose signallers all come earlier in the list, every counter's target is
 * its number of signallers, and every output row of every operator is
 * covered once. 0, or -1 with the first violation in err. */
int mk_dag_verify(const mk_config *c, const mk_dag *d, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

#endif
