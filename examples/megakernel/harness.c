/*
 * harness.c - host program of the decode megakernel (docs/megakernel.md).
 * Builds the model (seeded bf16 weights on the device, or --weights FILE),
 * fills the KV cache with a seeded context of --ctx positions, builds the
 * step's tile DAG, then decodes --steps tokens (batch 1, greedy) twice: with
 * the reference (one kernel per operator, reference.cubin) and with the
 * persistent megakernel (megakernel.cubin, through libargus_host, so `argus
 * observe` measures it). Each step's logits and token are compared:
 *
 *   max |logit_mk - logit_ref| <= 1e-2 at every step, and the same token,
 *   except a near-tie (the reference's logits of the two tokens within 1e-2),
 *   which is counted and the reference's token fed to both.
 *
 * Then (unless --no-time) both decode the same steps again back to back and
 * the harness prints ms/token for each.
 *
 *   megakernel_harness [--ctx N] [--steps S] [--seed X] [--weights FILE]
 *                      [--tiny] [--save-weights FILE] [--no-time]
 *                      [--prefetch] [--module FILE] [--ref-module FILE]
 *                      [--tokens-out FILE] [--tiles Q,WO,GU,DN,LG]
 * --seed draws the weights (unless --weights) and the context's KV cache.
 * --tiles sets the rows per GEMV tile of qkv, wo, gate_up (each of gate and
 * up), down and logits (default 32,16,16,16,64; 20,16,44,16,250 gives 128
 * tiles of each on TinyLlama).
 * --tokens-out writes the checked tokens (the prompt token, then one per step,
 * after near-ties the reference's, as fed on) one per line, for
 * examples/megakernel/torch_ref.py to compare PyTorch's decode with.
 * Exit 0: all steps within the tolerances; 1: a mismatch or a CUDA error;
 * 2: usage or a bad weight file.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>

#include "argus/host.h"
#include "mk_model.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL_LOGIT 1e-2f

static const char *who = "megakernel";
static ag_host *host;

#define CK(call)                                                                   \
  do {                                                                             \
    CUresult e_ = (call);                                                          \
    if (e_ != CUDA_SUCCESS) {                                                      \
      const char *s_ = NULL;                                                       \
      cuGetErrorString(e_, &s_);                                                   \
      fprintf(stderr, "%s: %s failed: %s\n", who, #call, s_ ? s_ : "?");           \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

#define AH(call)                                                                   \
  do {                                                                             \
    if ((call) != 0) {                                                             \
      fprintf(stderr, "%s: %s failed: %s\n", who, #call, ag_host_errmsg(host));    \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

typedef struct opts {
  int ctx, steps, tiny, time, prefetch;
  mk_tiles tiles;
  uint64_t seed;
  const char *weights, *save, *module, *ref_module, *tokens_out;
} opts;

/* the reference's kernels and buffers */
typedef struct ref {
  ag_host_kernel *embed, *rmsnorm, *gemv, *rope_kv, *attention, *silu_mul, *argmax;
  CUdeviceptr x, xn, qkv, attn, gate, up, h, logits, kc, vc, tokens;
} ref;

static CUdeviceptr alloc0(size_t bytes, int *bad) {
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, bytes) != CUDA_SUCCESS || cuMemsetD8(d, 0, bytes) != CUDA_SUCCESS) {
    fprintf(stderr, "%s: cannot allocate %zu bytes on the device\n", who, bytes);
    *bad = 1;
    return 0;
  }
  return d;
}

static int launch(ag_host_kernel *k, unsigned grid, unsigned block, unsigned smem, void **args) {
  AH(ag_host_launch(k, (ag_host_dim){grid, 1, 1}, (ag_host_dim){block, 1, 1}, smem, NULL, args));
  return 0;
}

/* one reference decode step: tokens[step] -> logits, tokens[step + 1] */
static int ref_step(ref *r, const mk_config *c, const mk_layout *L, CUdeviceptr w, int max_pos,
                    int step, int pos) {
  int H = c->hidden, F = c->ffn, V = c->vocab, nh = c->n_heads, kvh = c->n_kv_heads;
  int qkv_rows = (nh + 2 * kvh) * MK_HEAD_DIM, zero = 0, one = 1;
  float eps = c->rms_eps, theta = c->rope_theta;
  CUdeviceptr emb = w + 2 * L->embed;
  void *ae[] = {&emb, &r->tokens, &step, &r->x, &H};
  if (launch(r->embed, 1, 1024, 0, ae))
    return 1;
  for (int l = 0; l < c->layers; l++) {
    CUdeviceptr b = w + 2 * (L->layer_stride * (uint64_t)l);
    CUdeviceptr an = b + 2 * L->layer0.attn_norm, wqkv = b + 2 * L->layer0.wqkv;
    CUdeviceptr wo = b + 2 * L->layer0.wo, mn = b + 2 * L->layer0.mlp_norm;
    CUdeviceptr wg = b + 2 * L->layer0.w_gate, wu = b + 2 * L->layer0.w_up;
    CUdeviceptr wd = b + 2 * L->layer0.w_down;
    void *a1[] = {&r->x, &an, &r->xn, &H, &eps};
    void *a2[] = {&wqkv, &r->xn, &r->qkv, &qkv_rows, &H, &zero};
    void *a3[] = {&r->qkv, &r->kc, &r->vc, &l, &nh, &kvh, &max_pos, &pos, &theta};
    void *a4[] = {&r->qkv, &r->kc, &r->vc, &r->attn, &l, &nh, &kvh, &max_pos, &pos};
    void *a5[] = {&wo, &r->attn, &r->x, &H, &H, &one};
    void *a6[] = {&r->x, &mn, &r->xn, &H, &eps};
    void *a7[] = {&wg, &r->xn, &r->gate, &F, &H, &zero};
    void *a8[] = {&wu, &r->xn, &r->up, &F, &H, &zero};
    void *a9[] = {&r->gate, &r->up, &r->h, &F};
    void *a10[] = {&wd, &r->h, &r->x, &H, &F, &one};
    if (launch(r->rmsnorm, 1, 1024, 0, a1) || launch(r->gemv, (qkv_rows + 7) / 8, 256, 0, a2) ||
        launch(r->rope_kv, nh + kvh, 32, 0, a3) ||
        launch(r->attention, nh, 256, (unsigned)(pos + 1) * 4, a4) ||
        launch(r->gemv, (H + 7) / 8, 256, 0, a5) || launch(r->rmsnorm, 1, 1024, 0, a6) ||
        launch(r->gemv, (F + 7) / 8, 256, 0, a7) || launch(r->gemv, (F + 7) / 8, 256, 0, a8) ||
        launch(r->silu_mul, (F + 255) / 256, 256, 0, a9) ||
        launch(r->gemv, (H + 7) / 8, 256, 0, a10))
      return 1;
  }
  CUdeviceptr fn = w + 2 * L->final_norm, lm = w + 2 * L->lm_head;
  void *b1[] = {&r->x, &fn, &r->xn, &H, &eps};
  void *b2[] = {&lm, &r->xn, &r->logits, &V, &H, &zero};
  void *b3[] = {&r->logits, &V, &r->tokens, &step};
  return launch(r->rmsnorm, 1, 1024, 0, b1) || launch(r->gemv, (V + 7) / 8, 256, 0, b2) ||
         launch(r->argmax, 1, 1024, 0, b3);
}

static int usage(void) {
  fprintf(stderr, "usage: megakernel_harness [--ctx N] [--steps S] [--seed X] [--weights FILE] "
                  "[--tiny] [--save-weights FILE] [--no-time] [--module FILE] "
                  "[--ref-module FILE] [--tokens-out FILE] [--tiles Q,WO,GU,DN,LG]\n");
  return 2;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static int parse(int argc, char **argv, opts *o) {
  *o = (opts){1024, 64, 0, 1, 0, mk_tiles_default(), 1, NULL, NULL, NULL, NULL, NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--tiny"))
      o->tiny = 1;
    else if (!strcmp(a, "--no-time"))
      o->time = 0;
    else if (!strcmp(a, "--prefetch"))
      o->prefetch = 1;
    else if (!v) {
      fprintf(stderr, "%s: '%s' is not an option, or needs a value\n", who, a);
      return usage();
    } else if (!strcmp(a, "--ctx") || !strcmp(a, "--steps")) {
      int *dst = a[2] == 'c' ? &o->ctx : &o->steps;
      if (parse_int(v, a[2] == 'c' ? 0 : 1, MK_ATTN_CHUNK * MK_MAX_CHUNKS - 1, dst)) {
        fprintf(stderr, "%s: %s '%s': give an integer from %d to %d\n", who, a, v,
                a[2] == 'c' ? 0 : 1, MK_ATTN_CHUNK * MK_MAX_CHUNKS - 1);
        return 2;
      }
      i++;
    } else if (!strcmp(a, "--seed")) {
      o->seed = strtoull(v, NULL, 0);
      i++;
    } else if (!strcmp(a, "--weights"))
      o->weights = argv[++i];
    else if (!strcmp(a, "--save-weights"))
      o->save = argv[++i];
    else if (!strcmp(a, "--module"))
      o->module = argv[++i];
    else if (!strcmp(a, "--ref-module"))
      o->ref_module = argv[++i];
    else if (!strcmp(a, "--tokens-out"))
      o->tokens_out = argv[++i];
    else if (!strcmp(a, "--tiles")) {
      mk_tiles *t = &o->tiles;
      char end = 0;
      if (sscanf(v, "%d,%d,%d,%d,%d%c", &t->qkv, &t->wo, &t->gateup, &t->down, &t->logits,
                 &end) != 5) {
        fprintf(stderr, "%s: --tiles '%s': give five row counts, e.g. 32,16,16,16,64 (qkv, wo, "
                "gate_up, down, logits)\n", who, v);
        return 2;
      }
      i++;
    }
    else {
      fprintf(stderr, "%s: unknown option '%s'\n", who, a);
      return usage();
    }
  }
  if (o->ctx + o->steps > MK_ATTN_CHUNK * MK_MAX_CHUNKS) {
    fprintf(stderr, "%s: --ctx %d + --steps %d exceeds the %d positions the kernel handles\n",
            who, o->ctx, o->steps, MK_ATTN_CHUNK * MK_MAX_CHUNKS);
    return 2;
  }
  return 0;
}

/* a small model for quick runs and the weight file's GPU test */
static mk_config tiny_config(void) {
  mk_config c = {256, 2, 4, 2, 64, 512, 1000, 1e-5f, 10000.0f};
  return c;
}

/* file in the harness's own directory (found on PATH, argv[0] has none) */
static int beside(char *buf, size_t n, const char *argv0, const char *file) {
  char self[4096];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k > 0) {
    self[k] = 0;
    argv0 = self;
  }
  const char *slash = strrchr(argv0, '/');
  int d = slash ? (int)(slash - argv0 + 1) : 0;
  return snprintf(buf, n, "%.*s%s", d, argv0, file) >= (int)n;
}

static int run(const opts *o, const char *argv0) {
  char err[512], mpath[4096], rpath[4096];
  mk_config c = o->tiny ? tiny_config() : mk_config_tinyllama();
  uint16_t *hw = NULL;
  if (o->save) { /* the seeded weights, written on the host; no GPU needed */
    mk_layout L = mk_layout_of(&c);
    hw = malloc(L.total * 2);
    if (!hw) {
      fprintf(stderr, "%s: out of memory for %llu weights\n", who, (unsigned long long)L.total);
      return 1;
    }
    mk_weights_generate(&c, o->seed, hw);
    int bad = mk_weights_save(o->save, &c, hw, err, sizeof err);
    free(hw);
    if (bad) {
      fprintf(stderr, "%s: %s\n", who, err);
      return 2;
    }
    printf("%s: wrote %s (%llu weights)\n", who, o->save, (unsigned long long)L.total);
    return 0;
  }
  if (o->weights && mk_weights_load(o->weights, &c, &hw, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", who, err);
    return 2;
  }
  mk_layout L = mk_layout_of(&c);
  int max_pos = o->ctx + o->steps, bad = 0;
  mk_dag dag;
  if (mk_dag_build_tiles(&c, max_pos, &o->tiles, &dag, err, sizeof err) ||
      mk_dag_verify(&c, &dag, err, sizeof err)) {
    fprintf(stderr, "%s: %s\n", who, err);
    free(hw);
    return 2;
  }
  if (beside(mpath, sizeof mpath, argv0, "megakernel.cubin") ||
      beside(rpath, sizeof rpath, argv0, "reference.cubin"))
    return 1;
  ag_host_module *mm = NULL, *rm = NULL;
  ag_host_kernel *mk = NULL, *fill = NULL, *fill_cache = NULL;
  ref r;
  memset(&r, 0, sizeof r);
  AH(ag_host_load(host, o->module ? o->module : mpath, &mm)); /* the one Argus replaces */
  AH(ag_host_load(host, o->ref_module ? o->ref_module : rpath, &rm));
  AH(ag_host_kernel_get(mm, "mk_decode_step", &mk));
  AH(ag_host_kernel_get(rm, "mk_fill", &fill));
  AH(ag_host_kernel_get(rm, "mk_fill_cache", &fill_cache));
  AH(ag_host_kernel_get(rm, "ref_embed", &r.embed));
  AH(ag_host_kernel_get(rm, "ref_rmsnorm", &r.rmsnorm));
  AH(ag_host_kernel_get(rm, "ref_gemv", &r.gemv));
  AH(ag_host_kernel_get(rm, "ref_rope_kv", &r.rope_kv));
  AH(ag_host_kernel_get(rm, "ref_attention", &r.attention));
  AH(ag_host_kernel_get(rm, "ref_silu_mul", &r.silu_mul));
  AH(ag_host_kernel_get(rm, "ref_argmax", &r.argmax));
  /* a module whose mk_decode_step keeps its shared state in dynamic shared
   * memory (--module: the weight-buffer builds, mk_model.h) is launched with
   * MK_SMEM_BYTES of it (those kernels trap with less); the tree's kernel
   * declares its 46 KB statically and is launched with none */
  int mk_static = 0;
  unsigned mk_dyn = 0;
  CK(cuFuncGetAttribute(&mk_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                        (CUfunction)ag_host_kernel_cufunction(mk)));
  if (mk_static < 4096) {
    mk_dyn = MK_SMEM_BYTES;
    AH(ag_host_kernel_set_attr(mk, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)mk_dyn));
  }
  if ((size_t)max_pos * 4 > 48 * 1024)
    AH(ag_host_kernel_set_attr(r.attention, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               max_pos * 4));

  /* weights: the file's, or drawn from the seed on the device */
  CUdeviceptr w = alloc0(L.total * 2, &bad);
  if (bad)
    return 1;
  if (hw) {
    CK(cuMemcpyHtoD(w, hw, L.total * 2));
    free(hw);
    hw = NULL;
  } else {
    mk_draw d[2 + 7 * 1024 + 2];
    int n = mk_draws(&c, d, (int)(sizeof d / sizeof d[0]));
    for (int t = 0; t < n; t++) {
      CUdeviceptr at = w + 2 * d[t].offset;
      void *a[] = {&at, &d[t].count, (void *)&o->seed, &d[t].stream, &d[t].base, &d[t].scale};
      if (launch(fill, 1024, 256, 0, a))
        return 1;
    }
  }
  /* the KV caches (one each), the same seeded context */
  size_t cache = (size_t)c.layers * c.n_kv_heads * max_pos * MK_HEAD_DIM * 2;
  CUdeviceptr kc = alloc0(cache, &bad), vc = alloc0(cache, &bad);
  r.kc = alloc0(cache, &bad);
  r.vc = alloc0(cache, &bad);
  if (bad)
    return 1;
  {
    int layers = c.layers, kvh = c.n_kv_heads, ctx = o->ctx;
    void *a1[] = {&kc, &vc, &layers, &kvh, &max_pos, &ctx, (void *)&o->seed};
    void *a2[] = {&r.kc, &r.vc, &layers, &kvh, &max_pos, &ctx, (void *)&o->seed};
    if (launch(fill_cache, 1024, 256, 0, a1) || launch(fill_cache, 1024, 256, 0, a2))
      return 1;
  }
  int H = c.hidden, F = c.ffn, V = c.vocab, G = c.n_kv_heads, qpg = c.n_heads / G;
  int qkv_rows = (c.n_heads + 2 * G) * MK_HEAD_DIM;
  r.x = alloc0(H * 4, &bad);
  r.xn = alloc0(H * 4, &bad);
  r.qkv = alloc0(qkv_rows * 4, &bad);
  r.attn = alloc0(H * 4, &bad);
  r.gate = alloc0(F * 4, &bad);
  r.up = alloc0(F * 4, &bad);
  r.h = alloc0(F * 4, &bad);
  r.logits = alloc0((size_t)V * 4, &bad);
  r.tokens = alloc0((size_t)(o->steps + 1) * 4, &bad);
  mk_params p;
  memset(&p, 0, sizeof p);
  p.w = w;
  p.L = L;
  p.c = c;
  p.tasks = alloc0(dag.ntasks * sizeof(mk_task), &bad);
  p.counters = alloc0(dag.ncounters * 4, &bad);
  p.queue = alloc0(8, &bad);
  p.x = alloc0(H * 4, &bad);
  p.qkv = alloc0(qkv_rows * 4, &bad);
  p.attn = alloc0(H * 4, &bad);
  p.h = alloc0(F * 4, &bad);
  p.logits = alloc0((size_t)V * 4, &bad);
  p.part_o = alloc0((size_t)G * dag.nchunks * qpg * MK_HEAD_DIM * 4, &bad);
  p.part_ml = alloc0((size_t)G * dag.nchunks * qpg * 2 * 4, &bad);
  p.amax_v = alloc0(dag.logits_tiles * 4, &bad);
  p.amax_i = alloc0(dag.logits_tiles * 4, &bad);
  p.kcache = kc;
  p.vcache = vc;
  p.tokens = alloc0((size_t)(o->steps + 1) * 4, &bad);
  p.ntasks = dag.ntasks;
  p.ncounters = dag.ncounters;
  p.nchunks = dag.nchunks;
  p.chunk = dag.chunk;
  p.prefetch = o->prefetch;
  p.logits_tiles = dag.logits_tiles;
  p.max_pos = max_pos;
  if (bad)
    return 1;
  CK(cuMemcpyHtoD((CUdeviceptr)p.tasks, dag.tasks, dag.ntasks * sizeof(mk_task)));
  int first = 1; /* BOS */
  CK(cuMemcpyHtoD(r.tokens, &first, 4));
  CK(cuMemcpyHtoD((CUdeviceptr)p.tokens, &first, 4));
  CUdevice dev;
  int sms = 0, occ = 0;
  CK(cuCtxGetDevice(&dev));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &occ, (CUfunction)ag_host_kernel_cufunction(mk), MK_THREADS, mk_dyn));
  if (occ < 1) {
    fprintf(stderr, "%s: mk_decode_step does not fit on an SM (%d threads)\n", who, MK_THREADS);
    return 1;
  }
  printf("%s: %d layers, hidden %d, %d/%d heads, ffn %d, vocab %d; context %d, %d steps; "
         "%d tasks per step, %d CTAs x %d threads\n", who, c.layers, H, c.n_heads, G, F, V,
         o->ctx, o->steps, dag.ntasks, sms, MK_THREADS);

  /* the check: step by step, logits and token against the reference */
  float *lr = malloc((size_t)V * 4), *lm = malloc((size_t)V * 4);
  int *tok_ref = calloc((size_t)o->steps + 1, 4), *tok_mk = calloc((size_t)o->steps + 1, 4);
  if (!lr || !lm || !tok_ref || !tok_mk)
    return 1;
  float worst = 0.0f;
  int ties = 0, fails = 0;
  for (int s = 0; s < o->steps; s++) {
    int pos = o->ctx + s;
    p.step = s;
    p.pos = pos;
    void *ap[] = {&p};
    if (ref_step(&r, &c, &L, w, max_pos, s, pos) || launch(mk, (unsigned)sms, MK_THREADS, mk_dyn, ap))
      return 1;
    AH(ag_host_sync(host));
    CK(cuMemcpyDtoH(lr, r.logits, (size_t)V * 4));
    CK(cuMemcpyDtoH(lm, (CUdeviceptr)p.logits, (size_t)V * 4));
    CK(cuMemcpyDtoH(&tok_ref[s + 1], r.tokens + 4 * (s + 1), 4));
    CK(cuMemcpyDtoH(&tok_mk[s + 1], (CUdeviceptr)p.tokens + 4 * (s + 1), 4));
    float d = 0.0f;
    int at = 0;
    for (int i = 0; i < V; i++) {
      float e = fabsf(lm[i] - lr[i]);
      if (!(e <= d)) { /* NaN counts as the worst */
        d = isnan(e) ? INFINITY : e;
        at = i;
      }
    }
    if (d > worst)
      worst = d;
    if (!(d <= TOL_LOGIT)) {
      fprintf(stderr, "%s: step %d: logit %d is %.6g, the reference's %.6g (|diff| %.3g > %g)\n",
              who, s, at, lm[at], lr[at], d, (double)TOL_LOGIT);
      fails++;
    }
    int tr = tok_ref[s + 1], tm = tok_mk[s + 1];
    if (tr != tm) {
      if (tm >= 0 && tm < V && fabsf(lr[tr] - lr[tm]) <= TOL_LOGIT) {
        ties++;
        printf("%s: step %d: token %d, the reference's %d: a near-tie (reference logits %.6g "
               "and %.6g); the reference's token is fed to both\n", who, s, tm, tr, lr[tm], lr[tr]);
        CK(cuMemcpyHtoD((CUdeviceptr)p.tokens + 4 * (s + 1), &tr, 4));
        tok_mk[s + 1] = tr;
      } else {
        fprintf(stderr, "%s: step %d: token %d, the reference's %d\n", who, s, tm, tr);
        fails++;
      }
    }
    if (fails > 5)
      break;
  }
  int match = 0;
  for (int s = 1; s <= o->steps; s++)
    match += tok_ref[s] == tok_mk[s];
  printf("%s: tokens: %d/%d equal to the reference's (%d near-ties); max |logit diff| %.3g "
         "(tolerance %g)\n", who, match, o->steps, ties, (double)worst, (double)TOL_LOGIT);
  printf("%s: tokens:", who);
  for (int s = 1; s <= o->steps && s <= 16; s++)
    printf(" %d", tok_mk[s]);
  printf("%s\n", o->steps > 16 ? " ..." : "");
  if (fails) {
    fprintf(stderr, "%s: FAILED: %d steps outside the tolerances\n", who, fails);
    return 1;
  }
  if (o->tokens_out) {
    FILE *f = fopen(o->tokens_out, "w");
    if (!f) {
      fprintf(stderr, "%s: cannot write the tokens to '%s': %s\n", who, o->tokens_out,
              strerror(errno));
      return 1;
    }
    tok_mk[0] = first;
    for (int s = 0; s <= o->steps; s++)
      fprintf(f, "%d\n", tok_mk[s]);
    if (fclose(f)) {
      fprintf(stderr, "%s: cannot write the tokens to '%s'\n", who, o->tokens_out);
      return 1;
    }
  }

  if (o->time) { /* the same steps again, back to back, one event pair each */
    CUevent e0, e1;
    float ms_ref = 0.0f, ms_mk = 0.0f;
    CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    CK(cuEventRecord(e0, NULL));
    for (int s = 0; s < o->steps; s++)
      if (ref_step(&r, &c, &L, w, max_pos, s, o->ctx + s))
        return 1;
    CK(cuEventRecord(e1, NULL));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&ms_ref, e0, e1));
    CK(cuEventRecord(e0, NULL));
    for (int s = 0; s < o->steps; s++) {
      p.step = s;
      p.pos = o->ctx + s;
      void *ap[] = {&p};
      if (launch(mk, (unsigned)sms, MK_THREADS, mk_dyn, ap))
        return 1;
    }
    CK(cuEventRecord(e1, NULL));
    CK(cuEventSynchronize(e1));
    CK(cuEventElapsedTime(&ms_mk, e0, e1));
    int *again = calloc((size_t)o->steps + 1, 4);
    if (!again)
      return 1;
    CK(cuMemcpyDtoH(again, (CUdeviceptr)p.tokens, (size_t)(o->steps + 1) * 4));
    int same = 0;
    for (int s = 1; s <= o->steps; s++)
      same += again[s] == tok_mk[s];
    free(again);
    printf("%s: ms/token at context %d: megakernel %.3f, reference %.3f (%d steps each, "
           "back to back; the timed megakernel run repeated %d/%d tokens)\n", who, o->ctx,
           ms_mk / o->steps, ms_ref / o->steps, o->steps, same, o->steps);
    if (same != o->steps && !ties) {
      fprintf(stderr, "%s: FAILED: the timed run decoded other tokens\n", who);
      return 1;
    }
  }
  printf("%s: ok\n", who);
  mk_dag_release(&dag);
  free(lr);
  free(lm);
  free(tok_ref);
  free(tok_mk);
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  int rc = parse(argc, argv, &o);
  if (rc)
    return rc;
  if (o.save)
    return run(&o, argv[0]);
  if (ag_host_open(&host)) {
    fprintf(stderr, "%s: %s\n", who, ag_host_errmsg(host));
    ag_host_close(host);
    return 1;
  }
  rc = run(&o, argv[0]);
  if (ag_host_finish(host) && !rc) {
    fprintf(stderr, "%s: %s\n", who, ag_host_errmsg(host));
    rc = 1;
  }
  ag_host_close(host);
  return rc;
}
