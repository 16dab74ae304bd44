/* test_megakernel_host.c — the decode megakernel's host code on the CPU
 * (examples/megakernel/mk_model.c; docs/megakernel.md): TinyLlama's sizes
 * and parameter count, the seeded generator, the weight file written and
 * read back (and every bad file refused with its reason), and the tile DAG
 * (sizes, a topological order, each counter's target its number of
 * signallers, every row covered once) with deliberately broken DAGs that the
 * verifier must refuse. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "mk_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char err[512];

static mk_config tiny(void) {
  mk_config c = {128, 2, 2, 1, 64, 192, 100, 1e-5f, 10000.0f};
  return c;
}

TEST(test_tinyllama_sizes) {
  mk_config c = mk_config_tinyllama();
  CHECK_EQ_INT(mk_config_check(&c, err, sizeof err), 0);
  mk_layout L = mk_layout_of(&c);
  CHECK_EQ_U64(L.total, 1100048384ull); /* TinyLlama-1.1B's published parameter count */
  CHECK_EQ_U64(L.layer0.wqkv, 32000ull * 2048 + 2048);
  CHECK_EQ_U64(L.layer_stride, 2ull * 2048 + 2560ull * 2048 + 2048ull * 2048 + 3ull * 5632 * 2048);
  CHECK_EQ_U64(L.lm_head, L.final_norm + 2048);
  mk_draw d[200];
  int n = mk_draws(&c, d, 200);
  CHECK_EQ_INT(n, 3 + 7 * 22);
  uint64_t sum = 0;
  for (int i = 0; i < n; i++) {
    CHECK_EQ_U64(d[i].stream, (uint64_t)i);
    if (i + 1 < n)
      CHECK_EQ_U64(d[i].offset + d[i].count, d[i + 1].offset); /* contiguous, in file order */
    sum += d[i].count;
  }
  CHECK_EQ_U64(sum, L.total);
}

TEST(test_bad_configs) {
  static const struct {
    mk_config c;
    const char *why;
  } bad[] = {
      {{2048, 22, 32, 4, 128, 5632, 32000, 1e-5f, 1e4f}, "head_dim 128"},
      {{2048, 22, 16, 4, 64, 5632, 32000, 1e-5f, 1e4f}, "is not hidden 2048"},
      {{2048, 22, 32, 5, 64, 5632, 32000, 1e-5f, 1e4f}, "must divide"},
      {{2048, 22, 32, 1, 64, 5632, 32000, 1e-5f, 1e4f}, "at most 16"},
      {{2048, 22, 32, 4, 64, 5633, 32000, 1e-5f, 1e4f}, "multiples of 8"},
      {{2048, 22, 32, 4, 64, 16384, 32000, 1e-5f, 1e4f}, "at most 8192"},
      {{2048, 0, 32, 4, 64, 5632, 32000, 1e-5f, 1e4f}, "must be positive"},
      {{2048, 22, 32, 4, 64, 5632, 32000, 0.0f, 1e4f}, "rms_eps"},
      {{2048, 22, 32, 4, 64, 5632, 32000, 1e-5f, 1.0f}, "rope_theta"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    CHECK_EQ_INT(mk_config_check(&bad[i].c, err, sizeof err), -1);
    CHECK_CONTAINS(err, bad[i].why);
  }
}

TEST(test_generator) {
  double sum = 0, sq = 0;
  float lo = 1, hi = -1;
  for (int i = 0; i < 100000; i++) {
    float u = mk_uniform(1, 3, (uint64_t)i);
    sum += u;
    sq += (double)u * u;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  CHECK(lo >= -1.0f && hi < 1.0f && lo < -0.999f && hi > 0.999f);
  CHECK(sum / 1e5 > -0.01 && sum / 1e5 < 0.01);
  CHECK(sq / 1e5 > 0.32 && sq / 1e5 < 0.345); /* variance 1/3 */
  CHECK(mk_uniform(1, 3, 5) == mk_uniform(1, 3, 5));
  CHECK(mk_uniform(1, 3, 5) != mk_uniform(2, 3, 5));
  CHECK(mk_uniform(1, 3, 5) != mk_uniform(1, 4, 5));
  CHECK_EQ_INT(mk_bf16(1.0f), 0x3F80);
  CHECK_EQ_INT(mk_bf16(-2.0f), 0xC000);
  CHECK_EQ_INT(mk_bf16(1.00390625f), 0x3F80);   /* halfway: to even */
  CHECK_EQ_INT(mk_bf16(1.01171875f), 0x3F82);   /* halfway: to even, up */
  CHECK_EQ_INT(mk_bf16(1.0040f), 0x3F81);       /* above halfway */
  CHECK(mk_bf16_float(mk_bf16(3.140625f)) == 3.140625f);
}

/* a tiny model's seeded weights written to a file */
static uint16_t *tiny_file(const char *path, mk_config *c) {
  *c = tiny();
  mk_layout L = mk_layout_of(c);
  uint16_t *w = malloc(L.total * 2);
  mk_weights_generate(c, 42, w);
  CHECK_EQ_INT(mk_weights_save(path, c, w, err, sizeof err), 0);
  return w;
}

TEST(test_weight_file) {
  char path[] = "/tmp/mk-weights-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  mk_config c, r;
  uint16_t *w = tiny_file(path, &c), *back = NULL;
  mk_layout L = mk_layout_of(&c);
  /* the values: the generator's draws, norm weights near 1 */
  CHECK_EQ_INT(w[L.embed + 7], mk_bf16(1.7320508f * mk_uniform(42, 0, 7)));
  float nw = mk_bf16_float(w[L.layer0.attn_norm + 3]);
  CHECK(nw > 0.89f && nw < 1.11f);
  CHECK_EQ_INT(mk_weights_read_header(path, &r, err, sizeof err), 0);
  CHECK_EQ_INT(r.hidden, 128);
  CHECK_EQ_INT(r.ffn, 192);
  CHECK_EQ_INT(r.vocab, 100);
  CHECK(r.rms_eps == 1e-5f && r.rope_theta == 10000.0f);
  CHECK_EQ_INT(mk_weights_load(path, &r, &back, err, sizeof err), 0);
  CHECK(back != NULL);
  if (back)
    CHECK(memcmp(back, w, L.total * 2) == 0);
  /* little-endian on disk: the header's hidden, the first weight's bytes */
  FILE *f = fopen(path, "rb");
  unsigned char b[MK_FILE_HEADER + 2];
  CHECK(f && fread(b, 1, sizeof b, f) == sizeof b);
  if (f)
    fclose(f);
  CHECK_EQ_INT(b[12], 128);
  CHECK_EQ_INT(b[13], 0);
  CHECK_EQ_INT(b[MK_FILE_HEADER] | b[MK_FILE_HEADER + 1] << 8, w[0]);
  free(back);
  free(w);
  unlink(path);
}

/* writes the tiny file, applies edit(bytes, &len), and expects `why` */
static void bad_file(void (*edit)(unsigned char *, long *), const char *why) {
  char path[] = "/tmp/mk-bad-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  mk_config c;
  free(tiny_file(path, &c));
  FILE *f = fopen(path, "rb");
  unsigned char *buf = malloc(1 << 22);
  long n = f ? (long)fread(buf, 1, 1 << 22, f) : 0;
  if (f)
    fclose(f);
  edit(buf, &n);
  f = fopen(path, "wb");
  CHECK(f && fwrite(buf, 1, (size_t)n, f) == (size_t)n);
  if (f)
    fclose(f);
  mk_config r;
  uint16_t *w = (uint16_t *)1;
  err[0] = 0;
  CHECK_EQ_INT(mk_weights_load(path, &r, &w, err, sizeof err), -1);
  CHECK(w == NULL);
  CHECK_CONTAINS(err, why);
  CHECK_CONTAINS(err, path); /* where */
  free(buf);
  unlink(path);
}

static void e_magic(unsigned char *b, long *n) { b[3] = 'X'; }
static void e_version(unsigned char *b, long *n) { b[8] = 2; }
static void e_headdim(unsigned char *b, long *n) { b[28] = 32; }
static void e_padding(unsigned char *b, long *n) { b[60] = 1; }
static void e_truncated(unsigned char *b, long *n) { *n -= 2; }
static void e_longer(unsigned char *b, long *n) { b[(*n)++] = 0; }
static void e_short(unsigned char *b, long *n) { *n = 10; }
static void e_huge(unsigned char *b, long *n) { b[15] = 0x80; }

TEST(test_bad_weight_files) {
  bad_file(e_magic, "not the magic \"ARGUSMK1\"");
  bad_file(e_version, "version 2 at byte 8");
  bad_file(e_headdim, "head_dim 32");
  bad_file(e_padding, "header byte 60 is 1");
  bad_file(e_truncated, "the file is truncated");
  bad_file(e_longer, "longer than its model");
  bad_file(e_short, "shorter than its 64-byte header");
  bad_file(e_huge, "too large");
  mk_config r;
  uint16_t *w = NULL;
  CHECK_EQ_INT(mk_weights_load("/nonexistent/mk.bin", &r, &w, err, sizeof err), -1);
  CHECK_CONTAINS(err, "cannot open weight file '/nonexistent/mk.bin'");
  mk_config c = tiny();
  c.head_dim = 16;
  CHECK_EQ_INT(mk_weights_save("/tmp/mk-never", &c, NULL, err, sizeof err), -1);
  CHECK_CONTAINS(err, "head_dim 16");
}

static int count_op(const mk_dag *d, int op, int layer) {
  int n = 0;
  for (int i = 0; i < d->ntasks; i++)
    n += d->tasks[i].op == op && d->tasks[i].layer == layer;
  return n;
}

TEST(test_dag_tinyllama) {
  mk_config c = mk_config_tinyllama();
  mk_dag d;
  CHECK_EQ_INT(mk_dag_build(&c, 4096 + 64, &d, err, sizeof err), 0);
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), 0);
  CHECK_EQ_INT(d.chunk, 128);
  CHECK_EQ_INT(d.nchunks, 33);
  CHECK_EQ_INT(d.logits_tiles, 500);
  CHECK_EQ_INT(d.ncounters, 1 + 22 * 9 + 1);
  CHECK_EQ_INT(count_op(&d, MK_OP_QKV, 5), 80);
  CHECK_EQ_INT(count_op(&d, MK_OP_ATTN, 5), 4 * 33);
  CHECK_EQ_INT(count_op(&d, MK_OP_WO, 5), 128);
  CHECK_EQ_INT(count_op(&d, MK_OP_GATEUP, 5), 352);
  CHECK_EQ_INT(count_op(&d, MK_OP_DOWN, 21), 128);
  CHECK_EQ_INT(count_op(&d, MK_OP_LOGITS, 22), 500);
  CHECK_EQ_INT(d.ntasks, 1 + 22 * (80 + 132 + 128 + 352 + 128) + 500 + 1);
  CHECK_EQ_INT(d.tasks[0].op, MK_OP_EMBED);
  CHECK_EQ_INT(d.tasks[d.ntasks - 1].op, MK_OP_SAMPLE);
  CHECK_EQ_INT(d.tasks[d.ntasks - 1].wait_target, 500);
  /* a logits tile's ordinal is its argmax slot */
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].tile, 499);
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].a, 499 * 64);
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].b, 64);
  /* layer 1's qkv waits for all of layer 0's down tiles */
  for (int i = 0; i < d.ntasks; i++)
    if (d.tasks[i].op == MK_OP_QKV && d.tasks[i].layer == 1) {
      CHECK_EQ_INT(d.tasks[i].wait, mk_ctr_down(&c, 0));
      CHECK_EQ_INT(d.tasks[i].wait_target, 128);
      break;
    }
  mk_dag_release(&d);
  CHECK(d.tasks == NULL);
  CHECK_EQ_INT(mk_dag_build(&c, 1024 + 64, &d, err, sizeof err), 0);
  CHECK_EQ_INT(d.chunk, 48); /* about 32 chunks per KV head */
  CHECK_EQ_INT(d.nchunks, 23);
  CHECK_EQ_INT(d.ntasks, 1 + 22 * (80 + 4 * 23 + 128 + 352 + 128) + 500 + 1);
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), 0);
  mk_dag_release(&d);
  /* --tiles 20,16,44,16,250: 128 tiles of every GEMV operator (one wave on 132 SMs) */
  mk_tiles wave = {20, 16, 44, 16, 250};
  CHECK_EQ_INT(mk_dag_build_tiles(&c, 1024 + 64, &wave, &d, err, sizeof err), 0);
  CHECK_EQ_INT(d.ntasks, 1 + 22 * (128 + 4 * 23 + 128 + 128 + 128) + 128 + 1);
  CHECK_EQ_INT(d.logits_tiles, 128);
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].tile, 127);
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].a, 127 * 250);
  CHECK_EQ_INT(d.tasks[d.ntasks - 2].b, 250);
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), 0);
  mk_dag_release(&d);
  /* tiles out of range: refused, naming the sizes */
  mk_tiles bad = {20, 16, 129, 16, 250};
  CHECK_EQ_INT(mk_dag_build_tiles(&c, 1088, &bad, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "20,16,129,16,250");
  CHECK(d.tasks == NULL);
  bad.gateup = 128; /* 256 rows: the most */
  CHECK_EQ_INT(mk_dag_build_tiles(&c, 1088, &bad, &d, err, sizeof err), 0);
  mk_dag_release(&d);
  bad.logits = 0;
  CHECK_EQ_INT(mk_dag_build_tiles(&c, 1088, &bad, &d, err, sizeof err), -1);
  bad.logits = 257;
  CHECK_EQ_INT(mk_dag_build_tiles(&c, 1088, &bad, &d, err, sizeof err), -1);
  CHECK_EQ_INT(mk_dag_build(&c, 100, &d, err, sizeof err), 0);
  CHECK_EQ_INT(d.chunk, 16); /* the smallest chunk */
  CHECK_EQ_INT(d.nchunks, 7);
  mk_dag_release(&d);
  CHECK_EQ_INT(mk_dag_build(&c, 0, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "0 positions");
  CHECK_EQ_INT(mk_dag_build(&c, MK_ATTN_CHUNK * MK_MAX_CHUNKS + 1, &d, err, sizeof err), -1);
  CHECK(d.tasks == NULL);
}

/* the verifier catches each way a DAG can be wrong */
TEST(test_dag_broken) {
  mk_config c = tiny();
  mk_dag d;
  CHECK_EQ_INT(mk_dag_build(&c, 300, &d, err, sizeof err), 0);
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), 0);
  mk_task *t = d.tasks;
  int n = d.ntasks;
  /* a task before its producer: swap the first qkv and the embed */
  mk_task s = t[0];
  t[0] = t[1];
  t[1] = s;
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "not topological");
  t[1] = t[0];
  t[0] = s;
  /* a wrong wait target */
  t[n - 1].wait_target--;
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "waits for counter");
  t[n - 1].wait_target++;
  /* a row covered twice: a wo tile shifted by one row */
  int wo = -1;
  for (int i = 0; i < n && wo < 0; i++)
    if (t[i].op == MK_OP_WO && t[i].a > 0)
      wo = i;
  t[wo].a--;
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "covered twice");
  t[wo].a++;
  /* a row not covered: the last logits tile one row short */
  t[n - 2].b--;
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), -1);
  CHECK_CONTAINS(err, "not covered");
  t[n - 2].b++;
  /* a counter signalled once too often */
  t[2].signal = t[1].signal;
  t[2].op = MK_OP_QKV;
  d.target[0]++; /* keep the counts of the embed's counter honest */
  CHECK_EQ_INT(mk_dag_verify(&c, &d, err, sizeof err), -1);
  mk_dag_release(&d);
}

RUN_TESTS(T(test_tinyllama_sizes), T(test_bad_configs), T(test_generator), T(test_weight_file),
          T(test_bad_weight_files), T(test_dag_tinyllama), T(test_dag_broken))
