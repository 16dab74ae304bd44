/*
 * mk_model.c - host side of the decode megakernel (examples/megakernel): the
 * TinyLlama configuration and its checks, the flat weight layout, the seeded
 * weights on the host, the weight file's reader and writer, and the tile DAG
 * of one decode step with its verifier.
 *
 * Called once per run (the DAG: about 19k tasks for 22 layers at 4k
 * positions; the weights: 1.1 G elements read in 64 MiB blocks). No global
 * state; every failure returns -1 with a message (what, where, what to do).
 */
#include "mk_model.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char magic[8] = {'A', 'R', 'G', 'U', 'S', 'M', 'K', '1'};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && errlen)
    vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

mk_config mk_config_tinyllama(void) {
  mk_config c = {2048, 22, 32, 4, 64, 5632, 32000, 1e-5f, 10000.0f};
  return c;
}

int mk_config_check(const mk_config *c, char *err, size_t errlen) {
  if (c->hidden <= 0 || c->layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
      c->ffn <= 0 || c->vocab <= 0)
    return fail(err, errlen, "every size must be positive (hidden %d, layers %d, heads %d, "
                "kv heads %d, ffn %d, vocab %d)", c->hidden, c->layers, c->n_heads,
                c->n_kv_heads, c->ffn, c->vocab);
  if (c->head_dim != MK_HEAD_DIM)
    return fail(err, errlen, "head_dim %d: the kernels are written for head_dim %d",
                c->head_dim, MK_HEAD_DIM);
  if ((long)c->n_heads * c->head_dim != c->hidden)
    return fail(err, errlen, "heads x head_dim = %d x %d is not hidden %d", c->n_heads,
                c->head_dim, c->hidden);
  if (c->n_heads % c->n_kv_heads || c->n_heads / c->n_kv_heads > MK_MAX_QPG)
    return fail(err, errlen, "%d query heads over %d KV heads: they must divide, at most %d "
                "query heads per KV head", c->n_heads, c->n_kv_heads, MK_MAX_QPG);
  if (c->hidden % 8 || c->ffn % 8 || c->hidden > MK_MAX_K || c->ffn > MK_MAX_K)
    return fail(err, errlen, "hidden %d and ffn %d must be multiples of 8 and at most %d (the "
                "GEMV reads 8 bf16 at a time and stages its input in shared memory)",
                c->hidden, c->ffn, MK_MAX_K);
  if (c->layers > 1024 || c->vocab > (1 << 24) || c->ffn > (1 << 24))
    return fail(err, errlen, "layers %d or vocab %d out of range (at most 1024 and 2^24)",
                c->layers, c->vocab);
  if (!(c->rms_eps > 0.0f && c->rms_eps < 1.0f) || !(c->rope_theta > 1.0f && c->rope_theta < 1e9f))
    return fail(err, errlen, "rms_eps %g must be in (0, 1) and rope_theta %g in (1, 1e9)",
                (double)c->rms_eps, (double)c->rope_theta);
  return 0;
}

mk_layout mk_layout_of(const mk_config *c) {
  mk_layout L;
  uint64_t h = (uint64_t)c->hidden, f = (uint64_t)c->ffn;
  uint64_t qkv = (uint64_t)(c->n_heads + 2 * c->n_kv_heads) * (uint64_t)c->head_dim;
  uint64_t o = 0;
  L.embed = o;
  o += (uint64_t)c->vocab * h;
  uint64_t l0 = o;
  L.layer0.attn_norm = o;
  o += h;
  L.layer0.wqkv = o;
  o += qkv * h;
  L.layer0.wo = o;
  o += h * h;
  L.layer0.mlp_norm = o;
  o += h;
  L.layer0.w_gate = o;
  o += f * h;
  L.layer0.w_up = o;
  o += f * h;
  L.layer0.w_down = o;
  o += h * f;
  L.layer_stride = o - l0;
  o = l0 + L.layer_stride * (uint64_t)c->layers;
  L.final_norm = o;
  o += h;
  L.lm_head = o;
  o += (uint64_t)c->vocab * h;
  L.total = o;
  return L;
}

int mk_draws(const mk_config *c, mk_draw *out, int cap) {
  mk_layout L = mk_layout_of(c);
  uint64_t h = (uint64_t)c->hidden, f = (uint64_t)c->ffn;
  uint64_t qkv = (uint64_t)(c->n_heads + 2 * c->n_kv_heads) * (uint64_t)c->head_dim;
  float sh = sqrtf(3.0f / (float)h), sf = sqrtf(3.0f / (float)f);
  int n = 0;
#define DRAW(off, cnt, b, s)                                                      \
  do {                                                                            \
    if (n < cap)                                                                  \
      out[n] = (mk_draw){(off), (cnt), (uint64_t)n, (b), (s)};                    \
    n++;                                                                          \
  } while (0)
  DRAW(L.embed, (uint64_t)c->vocab * h, 0.0f, 1.7320508f); /* unit variance */
  for (int l = 0; l < c->layers; l++) {
    uint64_t b = L.layer_stride * (uint64_t)l;
    DRAW(b + L.layer0.attn_norm, h, 1.0f, 0.1f);
    DRAW(b + L.layer0.wqkv, qkv * h, 0.0f, sh);
    DRAW(b + L.layer0.wo, h * h, 0.0f, sh);
    DRAW(b + L.layer0.mlp_norm, h, 1.0f, 0.1f);
    DRAW(b + L.layer0.w_gate, f * h, 0.0f, sh);
    DRAW(b + L.layer0.w_up, f * h, 0.0f, sh);
    DRAW(b + L.layer0.w_down, h * f, 0.0f, sf);
  }
  DRAW(L.final_norm, h, 1.0f, 0.1f);
  DRAW(L.lm_head, (uint64_t)c->vocab * h, 0.0f, sh);
#undef DRAW
  return n;
}

void mk_weights_generate(const mk_config *c, uint64_t seed, uint16_t *w) {
  mk_draw d[2 + 7 * 1024 + 2];
  int n = mk_draws(c, d, (int)(sizeof d / sizeof d[0]));
  for (int t = 0; t < n; t++)
    for (uint64_t i = 0; i < d[t].count; i++)
      w[d[t].offset + i] = mk_draw_value(d[t].base, d[t].scale, mk_uniform(seed, d[t].stream, i));
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

static float u32_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t float_u32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* opens path and checks its header; on success *fp is positioned after it */
static int open_checked(const char *path, mk_config *c, FILE **fp, char *err, size_t errlen) {
  unsigned char h[MK_FILE_HEADER];
  *fp = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(err, errlen, "cannot open weight file '%s': %s", path, strerror(errno));
  size_t got = fread(h, 1, sizeof h, f);
  if (got < sizeof h) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': %zu bytes, shorter than its %d-byte header "
                "(write it with megakernel_harness --save-weights)", path, got, MK_FILE_HEADER);
  }
  if (memcmp(h, magic, 8)) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': bytes 0-7 are not the magic \"ARGUSMK1\": not "
                "a megakernel weight file (docs/megakernel.md, \"Weight file\")", path);
  }
  uint32_t version = get_u32(h + 8);
  if (version != 1) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': version %u at byte 8, this reader knows "
                "version 1", path, version);
  }
  int32_t v[7];
  for (int i = 0; i < 7; i++) {
    uint32_t u = get_u32(h + 12 + 4 * i);
    if (u > 0x7FFFFFFFu) {
      fclose(f);
      return fail(err, errlen, "weight file '%s': size field %d (byte %d) is %u, too large",
                  path, i, 12 + 4 * i, u);
    }
    v[i] = (int32_t)u;
  }
  mk_config m = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], u32_float(get_u32(h + 40)),
                 u32_float(get_u32(h + 44))};
  char why[256];
  if (mk_config_check(&m, why, sizeof why)) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': header (bytes 12-47) describes a model the "
                "kernels cannot run: %s", path, why);
  }
  for (int i = 48; i < MK_FILE_HEADER; i++)
    if (h[i]) {
      fclose(f);
      return fail(err, errlen, "weight file '%s': header byte %d is %d, the padding must be "
                  "zero", path, i, h[i]);
    }
  mk_layout L = mk_layout_of(&m);
  uint64_t want = MK_FILE_HEADER + L.total * 2;
  if (fseek(f, 0, SEEK_END) == 0) {
    long end = ftell(f);
    if (end >= 0 && (uint64_t)end != want) {
      fclose(f);
      return fail(err, errlen, "weight file '%s' has %ld bytes; its header's model needs %llu "
                  "(%d-byte header + %llu bf16 weights): the file is %s", path, end,
                  (unsigned long long)want, MK_FILE_HEADER, (unsigned long long)L.total,
                  (uint64_t)end < want ? "truncated" : "longer than its model");
    }
  }
  if (fseek(f, MK_FILE_HEADER, SEEK_SET)) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': cannot seek: %s", path, strerror(errno));
  }
  *c = m;
  *fp = f;
  return 0;
}

int mk_weights_read_header(const char *path, mk_config *c, char *err, size_t errlen) {
  FILE *f = NULL;
  if (open_checked(path, c, &f, err, errlen))
    return -1;
  fclose(f);
  return 0;
}

int mk_weights_load(const char *path, mk_config *c, uint16_t **w, char *err, size_t errlen) {
  FILE *f = NULL;
  *w = NULL;
  if (open_checked(path, c, &f, err, errlen))
    return -1;
  mk_layout L = mk_layout_of(c);
  uint16_t *buf = malloc(L.total * 2);
  if (!buf) {
    fclose(f);
    return fail(err, errlen, "weight file '%s': out of memory for %llu bytes", path,
                (unsigned long long)(L.total * 2));
  }
  unsigned char *blk = malloc(1 << 26);
  uint64_t done = 0;
  while (blk && done < L.total) {
    uint64_t n = L.total - done;
    if (n > (1u << 25))
      n = 1u << 25;
    size_t got = fread(blk, 2, (size_t)n, f);
    for (size_t i = 0; i < got; i++) /* little-endian on disk, whatever the host */
      buf[done + i] = (uint16_t)(blk[2 * i] | blk[2 * i + 1] << 8);
    done += got;
    if (got < n)
      break;
  }
  free(blk);
  fclose(f);
  if (done < L.total) {
    free(buf);
    return fail(err, errlen, "weight file '%s': read %llu of %llu weights (truncated while "
                "reading, or out of memory)", path, (unsigned long long)done,
                (unsigned long long)L.total);
  }
  *w = buf;
  return 0;
}

int mk_weights_save(const char *path, const mk_config *c, const uint16_t *w, char *err,
                    size_t errlen) {
  if (mk_config_check(c, err, errlen))
    return -1;
  unsigned char h[MK_FILE_HEADER] = {0};
  memcpy(h, magic, 8);
  put_u32(h + 8, 1);
  const int32_t v[7] = {c->hidden, c->layers, c->n_heads, c->n_kv_heads, c->head_dim, c->ffn,
                        c->vocab};
  for (int i = 0; i < 7; i++)
    put_u32(h + 12 + 4 * i, (uint32_t)v[i]);
  put_u32(h + 40, float_u32(c->rms_eps));
  put_u32(h + 44, float_u32(c->rope_theta));
  FILE *f = fopen(path, "wb");
  if (!f)
    return fail(err, errlen, "cannot create weight file '%s': %s", path, strerror(errno));
  mk_layout L = mk_layout_of(c);
  int ok = fwrite(h, 1, sizeof h, f) == sizeof h;
  unsigned char blk[8192];
  for (uint64_t i = 0; ok && i < L.total; i += 4096) {
    size_t n = L.total - i < 4096 ? (size_t)(L.total - i) : 4096;
    for (size_t k = 0; k < n; k++) {
      blk[2 * k] = (unsigned char)w[i + k];
      blk[2 * k + 1] = (unsigned char)(w[i + k] >> 8);
    }
    ok = fwrite(blk, 2, n, f) == n;
  }
  if (fclose(f) || !ok)
    return fail(err, errlen, "writing weight file '%s' failed: %s", path, strerror(errno));
  return 0;
}

/* appends a task (the array grows by doubling) */
static int push(mk_dag *d, int *cap, mk_task t) {
  if (d->ntasks == *cap) {
    int nc = *cap ? *cap * 2 : 1024;
    mk_task *nt = realloc(d->tasks, (size_t)nc * sizeof *nt);
    if (!nt)
      return -1;
    d->tasks = nt;
    *cap = nc;
  }
  d->tasks[d->ntasks++] = t;
  return 0;
}

/* GEMV tiles of `rows` output rows, `tile` at a time */
static int push_tiles(mk_dag *d, int *cap, int op, int layer, int rows, int tile, int wait,
                      int wait_target, int signal) {
  for (int r = 0; r < rows; r += tile) {
    mk_task t = {op, layer, r, rows - r < tile ? rows - r : tile, wait, wait_target, signal,
                 r / tile};
    if (push(d, cap, t))
      return -1;
  }
  return 0;
}

static int ntiles(int rows, int tile) { return (rows + tile - 1) / tile; }

mk_tiles mk_tiles_default(void) {
  mk_tiles t = {32, 16, 16, 16, 64};
  return t;
}

int mk_dag_build(const mk_config *c, int max_pos, mk_dag *d, char *err, size_t errlen) {
  mk_tiles t = mk_tiles_default();
  return mk_dag_build_tiles(c, max_pos, &t, d, err, errlen);
}

int mk_dag_build_tiles(const mk_config *c, int max_pos, const mk_tiles *tl, mk_dag *d, char *err,
                       size_t errlen) {
  memset(d, 0, sizeof *d);
  if (mk_config_check(c, err, errlen))
    return -1;
  if (tl->qkv < 1 || tl->wo < 1 || tl->gateup < 1 || tl->down < 1 || tl->logits < 1 ||
      tl->qkv > MK_MAX_TILE_ROWS || tl->wo > MK_MAX_TILE_ROWS || 2 * tl->gateup > MK_MAX_TILE_ROWS ||
      tl->down > MK_MAX_TILE_ROWS || tl->logits > MK_MAX_TILE_ROWS)
    return fail(err, errlen, "tiles of %d,%d,%d,%d,%d rows (qkv, wo, gate_up, down, logits): each "
                "must be 1 to %d output rows (gate_up's twice its size)", tl->qkv, tl->wo,
                tl->gateup, tl->down, tl->logits, MK_MAX_TILE_ROWS);
  d->tiles = *tl;
  if (max_pos < 1 || max_pos > MK_ATTN_CHUNK * MK_MAX_CHUNKS)
    return fail(err, errlen, "%d positions: the megakernel handles 1 to %d (context + steps)",
                max_pos, MK_ATTN_CHUNK * MK_MAX_CHUNKS);
  int cap = 0, G = c->n_kv_heads;
  int qkv_rows = (c->n_heads + 2 * G) * c->head_dim;
  /* about 32 chunks per KV head (4 x 32 tasks fill 132 SMs), a multiple of 16
   * positions each (so at least 16), at most MK_ATTN_CHUNK */
  d->chunk = ((max_pos + 31) / 32 + 15) / 16 * 16;
  d->chunk = d->chunk > MK_ATTN_CHUNK ? MK_ATTN_CHUNK : d->chunk;
  d->nchunks = (max_pos + d->chunk - 1) / d->chunk;
  d->ncounters = mk_ctr_logits(c) + 1;
  d->logits_tiles = ntiles(c->vocab, tl->logits);
  d->target = calloc((size_t)d->ncounters, sizeof *d->target);
  if (!d->target)
    goto oom;
  d->target[0] = 1;
  if (push(d, &cap, (mk_task){MK_OP_EMBED, 0, 0, c->hidden, -1, 0, 0, 0}))
    goto oom;
  int prev = 0; /* the counter that completes the residual stream x */
  for (int l = 0; l < c->layers; l++) {
    int q = mk_ctr_qkv(c, l), a = mk_ctr_attn(c, l), o = mk_ctr_wo(c, l);
    int gu = mk_ctr_gateup(c, l), dn = mk_ctr_down(c, l);
    d->target[q] = ntiles(qkv_rows, tl->qkv);
    d->target[a] = G;
    d->target[o] = ntiles(c->hidden, tl->wo);
    d->target[gu] = ntiles(c->ffn, tl->gateup);
    d->target[dn] = ntiles(c->hidden, tl->down);
    if (push_tiles(d, &cap, MK_OP_QKV, l, qkv_rows, tl->qkv, prev, d->target[prev], q))
      goto oom;
    for (int ch = 0; ch < d->nchunks; ch++) /* chunk-major: every head's first chunk early */
      for (int g = 0; g < G; g++) {
        d->target[mk_ctr_arrive(c, l, g)] = d->nchunks;
        if (push(d, &cap, (mk_task){MK_OP_ATTN, l, g, ch, q, d->target[q],
                                    mk_ctr_arrive(c, l, g), 0}))
          goto oom;
      }
    if (push_tiles(d, &cap, MK_OP_WO, l, c->hidden, tl->wo, a, G, o) ||
        push_tiles(d, &cap, MK_OP_GATEUP, l, c->ffn, tl->gateup, o, d->target[o], gu) ||
        push_tiles(d, &cap, MK_OP_DOWN, l, c->hidden, tl->down, gu, d->target[gu], dn))
      goto oom;
    prev = dn;
  }
  int lg = mk_ctr_logits(c);
  d->target[lg] = d->logits_tiles;
  if (push_tiles(d, &cap, MK_OP_LOGITS, c->layers, c->vocab, tl->logits, prev,
                 d->target[prev], lg) ||
      push(d, &cap, (mk_task){MK_OP_SAMPLE, c->layers, 0, 1, lg, d->target[lg], -1, 0}))
    goto oom;
  return 0;
oom:
  mk_dag_release(d);
  return fail(err, errlen, "out of memory building the DAG");
}

void mk_dag_release(mk_dag *d) {
  free(d->tasks);
  free(d->target);
  memset(d, 0, sizeof *d);
}

/* rows of the operator's output (the vector its tiles cover) */
static int op_rows(const mk_config *c, int op) {
  switch (op) {
  case MK_OP_EMBED:
  case MK_OP_WO:
  case MK_OP_DOWN:
    return c->hidden;
  case MK_OP_QKV:
    return (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
  case MK_OP_GATEUP:
    return c->ffn;
  case MK_OP_LOGITS:
    return c->vocab;
  default:
    return 1;
  }
}

int mk_dag_verify(const mk_config *c, const mk_dag *d, char *err, size_t errlen) {
  int rc = -1;
  int *signals = calloc((size_t)d->ncounters, sizeof *signals);
  int *last = malloc((size_t)d->ncounters * sizeof *last); /* index of the last signaller */
  int G = c->n_kv_heads, rows_max = c->vocab > c->ffn ? c->vocab : c->ffn;
  if (rows_max < c->hidden * 3)
    rows_max = c->hidden * 3;
  unsigned char *cover = malloc((size_t)rows_max);
  if (!signals || !last || !cover) {
    fail(err, errlen, "out of memory verifying the DAG");
    goto out;
  }
  for (int i = 0; i < d->ncounters; i++)
    last[i] = -1;
  /* the attention counters are signalled by the last chunk of each KV head:
   * any ATTN task of the layer may be it */
  for (int i = 0; i < d->ntasks; i++) {
    const mk_task *t = &d->tasks[i];
    if (t->signal >= d->ncounters || t->wait >= d->ncounters || t->signal < -1 || t->wait < -1) {
      fail(err, errlen, "task %d: counter out of range", i);
      goto out;
    }
    if (t->signal >= 0) {
      signals[t->signal]++;
      last[t->signal] = i;
    }
    if (t->op == MK_OP_ATTN) {
      int ac = mk_ctr_attn(c, t->layer);
      if (t->b == d->nchunks - 1 && t->a == G - 1)
        signals[ac] += G; /* the heads' last chunks, all issued by now */
      last[ac] = i;
    }
  }
  for (int i = 0; i < d->ntasks; i++) {
    const mk_task *t = &d->tasks[i];
    if (t->wait < 0)
      continue;
    if (t->wait_target != d->target[t->wait] || signals[t->wait] != d->target[t->wait]) {
      fail(err, errlen, "task %d (op %d, layer %d) waits for counter %d to reach %d; its "
           "target is %d and it has %d signallers", i, t->op, t->layer, t->wait,
           t->wait_target, d->target[t->wait], signals[t->wait]);
      goto out;
    }
    if (last[t->wait] >= i) {
      fail(err, errlen, "task %d (op %d, layer %d) waits for counter %d, signalled by task %d "
           "after it: the order is not topological", i, t->op, t->layer, t->wait,
           last[t->wait]);
      goto out;
    }
  }
  for (int c2 = 0; c2 < d->ncounters; c2++)
    if (signals[c2] != d->target[c2]) {
      fail(err, errlen, "counter %d has %d signallers, target %d", c2, signals[c2],
           d->target[c2]);
      goto out;
    }
  /* coverage: every GEMV operator's rows exactly once per layer */
  static const int gemv_ops[] = {MK_OP_QKV, MK_OP_WO, MK_OP_GATEUP, MK_OP_DOWN, MK_OP_LOGITS};
  for (int l = 0; l <= c->layers; l++)
    for (int k = 0; k < 5; k++) {
      int op = gemv_ops[k], n = op_rows(c, op);
      if ((op == MK_OP_LOGITS) != (l == c->layers))
        continue;
      memset(cover, 0, (size_t)n);
      for (int i = 0; i < d->ntasks; i++) {
        const mk_task *t = &d->tasks[i];
        if (t->op != op || t->layer != l)
          continue;
        if (t->a < 0 || t->b <= 0 || t->a + t->b > n) {
          fail(err, errlen, "task %d (op %d, layer %d): rows %d+%d outside 0..%d", i, op, l,
               t->a, t->b, n);
          goto out;
        }
        for (int r = t->a; r < t->a + t->b; r++)
          if (cover[r]++) {
            fail(err, errlen, "op %d layer %d: row %d covered twice", op, l, r);
            goto out;
          }
      }
      for (int r = 0; r < n; r++)
        if (!cover[r]) {
          fail(err, errlen, "op %d layer %d: row %d not covered", op, l, r);
          goto out;
        }
    }
  rc = 0;
out:
  free(signals);
  free(last);
  free(cover);
  return rc;
}
