/*
 * test_async_shapes.c — waits of every shape and the iterations of unrolled
 * copies, on ground-truth kernels written for Argus
 * (tests/data/cuda/async_truth.cu, compiled into the PTX corpus): discovery
 * recognizes CUTLASS's two-block wait in a { } scope and a one-block wait
 * with a suspend-time hint as spin loops and times them; a wait loop that
 * also counts its spins is untimed with the reason; the traced variant with
 * waits marks exactly the timed waits that complete an asynchronous
 * operation, around the whole loop (begin before its header label, end
 * after its exit label); the copies of a loop unrolled x4 run at 4m + j
 * (brute force: the add that makes each copy's marker register).
 */
#include "check.h"

#include "argus/variant.h"
#include "../trace/trace_util.h"

static const ag_ptx_site *site_in(const ag_ptx_regions *r, const char *func, ag_ptx_site_kind k,
                                  int nth) {
  for (int i = 0; r && i < r->nsites; i++)
    if (r->sites[i].kind == k && !strcmp(r->sites[i].func->name, func) && nth-- == 0)
      return &r->sites[i];
  return NULL;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle))
    n++;
  return n;
}

/* The ground truth's PTX from the corpus, parsed and discovered (0), or -1. */
static int open_truth(char **ptx, size_t *len, ag_ptx_module **m, ag_ptx_regions **r,
                      ag_diags *d) {
  *m = NULL;
  *r = NULL;
  *ptx = tu_read_build_file("tests/data/ptx/async_truth.ptx", len);
  CHECK(*ptx != NULL);
  if (!*ptx)
    return -1;
  CHECK_EQ_INT(ag_ptx_parse(*ptx, *len, "async_truth", d, m), 0);
  CHECK_EQ_INT(*m ? ag_ptx_discover(*m, d, r) : -1, 0);
  if (!*r)
    tu_print_diags(d);
  return *r ? 0 : -1;
}

TEST(waits_of_every_shape) {
  size_t len = 0;
  char *ptx = NULL;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  if (open_truth(&ptx, &len, &m, &r, &d))
    goto out;
  /* wait_shapes: the producer's two-block wait, the consumers' hinted one */
  const ag_ptx_site *two = site_in(r, "wait_shapes", AG_PTX_SITE_MBAR_WAIT, 0);
  const ag_ptx_site *hint = site_in(r, "wait_shapes", AG_PTX_SITE_MBAR_WAIT, 1);
  CHECK(two && hint);
  if (!two || !hint)
    goto out;
  CHECK(strstr(two->stmt->text, "P1") != NULL);
  CHECK_EQ_INT(two->stmt->nops, 3);
  CHECK_EQ_INT(hint->stmt->nops, 4); /* the suspend-time hint */
  CHECK(two->wait_first && two->wait_last && hint->wait_first && hint->wait_last);
  CHECK_EQ_STR(two->wait_shape, "spin loop (blocks)");
  CHECK_EQ_STR(hint->wait_shape, "spin loop (1 block)");
  /* the span: from the loop's label to the exit (DONE's label, or the
   * one-block loop's back branch) */
  CHECK_EQ_INT(two->wait_first ? (int)two->wait_first->kind : -1, AG_PTX_LABEL);
  CHECK_EQ_STR(two->wait_first ? two->wait_first->name : "", "LAB_WAIT");
  CHECK_EQ_STR(two->wait_last ? two->wait_last->name : "", "DONE");
  CHECK_EQ_STR(hint->wait_first ? hint->wait_first->name : "", "W");
  CHECK(hint->wait_last && hint->wait_last->line > hint->line); /* after `@!p bra W` */
  /* untimed_wait: the consumers' loop counts spins */
  const ag_ptx_site *cnt = site_in(r, "untimed_wait", AG_PTX_SITE_MBAR_WAIT, 1);
  CHECK(cnt && !cnt->wait_first && cnt->wait_why);
  if (cnt && cnt->wait_why)
    CHECK_CONTAINS(cnt->wait_why, "does more than wait");
  /* the traced variant with waits: one timed region per timed wait that
   * completes an async op (brute force over the discovery) */
  int want = 0;
  for (int i = 0; i < r->nsites; i++) {
    const ag_ptx_site *w = &r->sites[i];
    int completes = 0;
    for (int j = 0; j < r->nsites; j++)
      for (int k = 0; k < r->sites[j].ndone_by; k++)
        completes |= r->sites[j].done_by[k] == i && (r->sites[j].kind == AG_PTX_SITE_BULK_COPY);
    want += completes && w->wait_first != NULL;
  }
  /* the consumers' full waits: wait_shapes' hinted one, unroll4's two-block
   * one (untimed_wait's is not timed) */
  CHECK_EQ_INT(want, 2);
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant_async wa = {1, NULL, 0, 0};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, "async_truth", &tr, &wa, &d, &v), 0);
  if (v) {
    CHECK_EQ_U64(count(v->ptx, "argus: begin argus_wait_"), (size_t)want);
    CHECK_EQ_U64(count(v->ptx, "argus: end argus_wait_"), (size_t)want);
  } else {
    tu_print_diags(&d);
  }
  ag_variant_free(v);
out:
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
}

/* unroll4: each copy's marker register is the loop's induction plus the
 * copy's offset (brute force: follow the text's `add.s32 R, X, c` chain to
 * the register set to 0 before the loop) */
TEST(unrolled_copies_know_their_iterations) {
  size_t len = 0;
  char *ptx = NULL;
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  open_truth(&ptx, &len, &m, &r, &d);
  int seen[4] = {0, 0, 0, 0}, rem = 0, n = 0;
  for (int i = 0; r && i < r->nsites; i++) {
    const ag_ptx_site *s = &r->sites[i];
    if (s->kind != AG_PTX_SITE_BULK_COPY || strcmp(s->func->name, "unroll4"))
      continue;
    n++;
    CHECK(s->iter_known);
    if (s->iter_step == 4 && s->iter_first >= 0 && s->iter_first < 4)
      seen[s->iter_first]++;
    else if (s->iter_step == 1 && s->iter_first == 0)
      rem++;
    else
      fprintf(stderr, "site %s: %lld + %lld m (%s)\n", s->op_id, (long long)s->iter_first,
              (long long)s->iter_step, s->iter_from);
  }
  CHECK_EQ_INT(n, 5);
  CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
  CHECK_EQ_INT(rem, 1);
  /* a loop that is not unrolled: every iteration */
  const ag_ptx_site *one = site_in(r, "wait_shapes", AG_PTX_SITE_BULK_COPY, 0);
  CHECK(one && one->iter_known && one->iter_first == 0 && one->iter_step == 1);
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  ag_free(ptx);
}

RUN_TESTS(T(waits_of_every_shape), T(unrolled_copies_know_their_iterations))
