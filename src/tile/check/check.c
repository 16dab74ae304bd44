/*
 * check.c — the tile checker's entry point: runs the interpreter on every
 * kernel of a program, hands the obligations to the solver, and renders the
 * verdicts (text for people, JSON for agents; docs/check.md has the schema).
 */
#include "check_int.h"

#include <stdlib.h>
#include <string.h>

void ag__interp_module(ag__ck *c, const ag_tile_program *p);

static void side_free(ag_tile_cex_side *s) {
  ag_free(s->expr);
  ag_free(s->tag);
  ag_free(s->element);
  ag_free(s->via);
  ag_free(s->tag_other);
  ag_free(s->element_other);
  ag_free(s->via_other);
}

void ag__tile_cex_free(ag_tile_cex *x) {
  if (!x)
    return;
  for (int i = 0; i < x->nsizes; i++)
    ag_free(x->sizes[i].name);
  ag_free(x->sizes);
  for (int i = 0; i < x->nloops; i++)
    ag_free(x->loops[i].name);
  ag_free(x->loops);
  ag_free(x->reason);
  side_free(&x->lhs);
  side_free(&x->rhs);
  ag_free(x);
}

static void result_free(ag_tile_assert_result *a) {
  ag_free(a->kernel);
  ag_free(a->text);
  ag_free(a->detail);
  ag__tile_cex_free(a->cex);
  for (int i = 0; i < a->nmore; i++)
    ag__tile_cex_free(a->more[i]);
  ag_free(a->more);
}

void ag_tile_report_free(ag_tile_report *r) {
  if (!r)
    return;
  for (int i = 0; i < r->nasserts; i++)
    result_free(&r->asserts[i]);
  ag_free(r->asserts);
  for (int i = 0; i < r->nloops; i++) {
    ag_free(r->loops[i].kernel);
    ag_free(r->loops[i].var);
    ag_free(r->loops[i].how);
  }
  ag_free(r->loops);
  ag_free(r->file);
  ag_free(r);
}

int ag_tile_report_ok(const ag_tile_report *r) {
  for (int i = 0; i < r->nasserts; i++)
    if (r->asserts[i].status != AG_TILE_PROVED)
      return 0;
  return 1;
}

/* "B[70] is in bounds" for the implicit obligation of an access */
static char *bounds_text(const ag_tile_node *n) {
  ag_str s = AG_STR_INIT;
  ag_tile_print(n, 0, &s);
  ag_str_puts(&s, " is in bounds");
  char *t = s.oom ? NULL : ag_strdup(ag_str_cstr(&s));
  ag_str_release(&s);
  return t;
}

static char *assert_text(const ag_tile_program *p, const ag_tile_node *n);

/* "no data race: cp_async(sA[...], ...)" for a shared write (its pairs with
 * other threads' reads and writes, race.c) */
static char *race_text(const ag_tile_program *p, const ag_tile_node *n) {
  char *w = assert_text(p, n);
  ag_str s = AG_STR_INIT;
  ag_str_printf(&s, "no data race: %s", w ? w : "");
  ag_free(w);
  char *t = s.oom ? NULL : ag_strdup(ag_str_cstr(&s));
  ag_str_release(&s);
  return t;
}

static char *assert_text(const ag_tile_program *p, const ag_tile_node *n) {
  size_t len = 0;
  const char *line = ag_tile_srcline(p, n->line, &len);
  if (!line)
    return ag_strdup("");
  size_t skip = (size_t)(n->col > 0 ? n->col - 1 : 0);
  if (skip > len)
    skip = len;
  return ag_strndup(line + skip, len - skip);
}

/* Collects every assert statement of a kernel (reached or not). */
typedef AG_VEC(const ag_tile_node *) nodevec;
static void find_asserts(const ag_tile_list *l, nodevec *out, int *oom) {
  for (int i = 0; i < l->n; i++) {
    const ag_tile_node *n = l->v[i];
    if (n->kind == AG_TN_ASSERT && ag_vec_push(out, n))
      *oom = 1;
    if (n->kind == AG_TN_FOR || n->kind == AG_TN_IF || n->kind == AG_TN_REGION) {
      find_asserts(&n->list, out, oom);
      find_asserts(&n->list2, out, oom);
    }
  }
}

static int cmp_result(const void *x, const void *y) {
  const ag_tile_assert_result *a = x, *b = y;
  int k = strcmp(a->kernel ? a->kernel : "", b->kernel ? b->kernel : "");
  if (k)
    return k;
  if (a->line != b->line)
    return a->line < b->line ? -1 : 1;
  return a->col < b->col ? -1 : a->col > b->col;
}

void ag__ck_free(ag__ck *c) {
  if (!c)
    return;
  ag__evcache_free(c);
  ag__smt_decider_free(c);
  ag_free(c->offs);
  for (size_t i = 0; i < c->notes.n; i++) {
    ag_free(c->notes.v[i].kernel);
    ag_free(c->notes.v[i].var);
    ag_free(c->notes.v[i].how);
  }
  ag_vec_free(&c->notes);
  ag_vec_free(&c->params);
  ag_vec_free(&c->sizes);
  ag_vec_free(&c->assumes);
  ag_vec_free(&c->sbufs);
  ag_vec_free(&c->rbufs);
  ag_vec_free(&c->wrecs);
  ag_vec_free(&c->resets);
  ag_vec_free(&c->wg_pend);
  ag_vec_free(&c->tst_pend);
  ag_vec_free(&c->reads);
  ag_vec_free(&c->mbars);
  ag_vec_free(&c->msyncs);
  ag_map_release(&c->read_seen);
  ag_vec_free(&c->obligs);
  ag_vec_free(&c->asserts);
  ag_vec_free(&c->loops);
  ag_map_release(&c->tagcons);
  ag_map_release(&c->bounds_memo);
  ag_map_release(&c->align_memo);
  ag_map_release(&c->mask_memo);
  ag_layout_ctx_release(&c->lc);
  ag_arena_release(&c->arena);
  ag_free(c);
}

ag__ck *ag__ck_run(const ag_tile_program *p, const ag_tile_node *k, const ag_tile_check_opts *o,
                   ag_diags *d, int *rc) {
  *rc = 0;
  ag__ck *c = ag_calloc(1, sizeof *c);
  if (!c) {
    *rc = AG_ENOMEM;
    return NULL;
  }
  c->prog = p;
  c->kernel = k;
  c->wide_writes = ag__tile_calls(k, "bulk_copy") || ag__tile_calls(k, "tma_load");
  c->opts = o;
  c->diags = d;
  ag_arena_init(&c->arena, 0);
  ag_layout_ctx_init(&c->lc, &c->arena);
  ag_map_init(&c->tagcons);
  ag_map_init(&c->bounds_memo);
  ag_map_init(&c->align_memo);
  ag_map_init(&c->mask_memo);
  ag_map_init(&c->read_seen);
  if (setjmp(c->fail)) {
    if (c->cut && !c->fail_rc) {
      /* stopped after a refused loop's exact prefix (loop.c, ag__loop_cut):
       * the obligations so far are decided, the refusal reported then */
      ag_trace_end("tile.interpret");
      return c;
    }
    *rc = c->fail_rc ? c->fail_rc : AG_EPARSE;
    ag__ck_free(c);
    return NULL;
  }
  ag__scope *module = ag__ck_alloc(c, sizeof *module);
  c->scope = module;
  ag__interp_module(c, p);
  ag__scope *kscope = ag__ck_alloc(c, sizeof *kscope);
  kscope->parent = module;
  c->scope = kscope;
  ag_trace_begin("tile.interpret");
  ag__interp_kernel(c);
  ag_trace_end("tile.interpret");
  return c;
}

static int check_kernel(const ag_tile_program *p, const ag_tile_node *k,
                        const ag_tile_check_opts *o, ag_diags *d, ag_tile_report *r) {
  uint64_t t0 = ag_now_ns();
  int rc = 0;
  ag__ck *c = ag__ck_run(p, k, o, d, &rc);
  if (!c)
    return rc;
  uint64_t t1 = ag_now_ns();
  r->interp_s += (double)(t1 - t0) / 1e9;
  /* the summarized loops move to the report */
  if (c->notes.n) {
    ag_tile_loop_note *nl =
        ag_realloc(r->loops, ((size_t)r->nloops + c->notes.n) * sizeof *r->loops);
    if (!nl) {
      rc = AG_ENOMEM;
      ag__ck_free(c);
      return rc;
    }
    r->loops = nl;
    for (size_t i = 0; i < c->notes.n; i++)
      r->loops[r->nloops++] = c->notes.v[i];
    c->notes.n = 0;
  }
  if (setjmp(c->fail)) {
    /* out of memory while solving */
    rc = c->fail_rc ? c->fail_rc : AG_ENOMEM;
    goto out;
  }
  /* one result per reached assert statement, in c->asserts order */
  size_t n0 = (size_t)r->nasserts;
  ag_tile_assert_result *na =
      ag_realloc(r->asserts, (n0 + c->asserts.n + 1) * sizeof *r->asserts);
  if (!na) {
    rc = AG_ENOMEM;
    goto out;
  }
  r->asserts = na;
  for (size_t i = 0; i < c->asserts.n; i++) {
    ag_tile_assert_result *a = &r->asserts[n0 + i];
    memset(a, 0, sizeof *a);
    a->kernel = ag_strdup(k->name);
    a->line = c->asserts.v[i].at->line;
    a->col = c->asserts.v[i].at->col;
    a->bounds = c->asserts.v[i].bounds;
    a->race = c->asserts.v[i].race;
    a->text = a->bounds ? bounds_text(c->asserts.v[i].at)
              : a->race ? race_text(p, c->asserts.v[i].at)
                        : assert_text(p, c->asserts.v[i].at);
    a->instances = c->asserts.v[i].instances;
    r->nasserts++;
    if (!a->kernel || !a->text) {
      rc = AG_ENOMEM;
      goto out;
    }
  }
  ag_trace_begin("tile.solve");
  rc = ag__smt_check(c, r, 0);
  ag_trace_end("tile.solve");
  r->solve_s += (double)(ag_now_ns() - t1) / 1e9;
  if (rc)
    goto out;
  /* accesses proved in bounds are counted, not listed */
  int kept = (int)n0;
  for (int i = (int)n0; i < r->nasserts; i++) {
    ag_tile_assert_result *a = &r->asserts[i];
    if ((a->bounds || a->race) && a->status == AG_TILE_PROVED && !a->cex) {
      if (a->bounds)
        r->bounds_proved++;
      else
        r->races_proved++;
      result_free(a);
      continue;
    }
    r->asserts[kept++] = *a;
  }
  r->nasserts = kept;
  if (c->cut) {
    /* a loop could not be summarized: refuted when the obligations up to its
     * first iterations (each exact) are violated, else refused as before */
    int violated = 0;
    for (int i = (int)n0; i < r->nasserts; i++)
      violated |= r->asserts[i].status == AG_TILE_VIOLATED;
    if (!violated)
      rc = ag_tile_diag(p, d, AG_SEV_ERROR, c->cut_at, "%s", c->cut) ? AG_ENOMEM : AG_EPARSE;
    else if (c->cut_iters >= 0
                 ? ag_tile_diag(p, d, AG_SEV_WARNING, c->cut_at,
                                "%s; the check stopped after the loop's first %d iterations, "
                                "checked exactly (each under its trip count), where it found "
                                "the violations reported: fix them and check again",
                                c->cut, c->cut_iters)
                 : ag_tile_diag(p, d, AG_SEV_WARNING, c->cut_at,
                                "%s; the check stopped here, after the violations reported: "
                                "fix them and check again",
                                c->cut))
      rc = AG_ENOMEM;
    goto out;
  }
  /* assertions never reached (a loop of zero trips, a constant-false if) */
  nodevec all = {0};
  int oom = 0;
  find_asserts(&k->list2, &all, &oom);
  size_t first = (size_t)r->nasserts, nvac = 0, nuser = 0;
  for (size_t j = 0; j < c->asserts.n; j++)
    nuser += !c->asserts.v[j].bounds && !c->asserts.v[j].race;
  for (size_t i = 0; i < all.n && !oom; i++) {
    int reached = 0;
    for (size_t j = 0; j < c->asserts.n; j++)
      reached |= c->asserts.v[j].at == all.v[i];
    if (reached)
      continue;
    na = ag_realloc(r->asserts, ((size_t)r->nasserts + 1) * sizeof *r->asserts);
    if (!na) {
      oom = 1;
      break;
    }
    r->asserts = na;
    ag_tile_assert_result *a = &r->asserts[r->nasserts++];
    memset(a, 0, sizeof *a);
    a->kernel = ag_strdup(k->name);
    a->line = all.v[i]->line;
    a->col = all.v[i]->col;
    a->text = assert_text(p, all.v[i]);
    a->detail = ag_strdup("never reached (no instance to check)");
    if (!a->kernel || !a->text || !a->detail)
      oom = 1;
    nvac++;
    a->status = o->strict ? AG_TILE_VACUOUS : AG_TILE_PROVED;
    size_t ll = 0;
    const char *src = ag_tile_srcline(p, a->line, &ll);
    if (ag_diags_add(d, o->strict ? AG_SEV_ERROR : AG_SEV_WARNING, p->file, a->line, a->col,
                     src, ll,
                     "assertion never reached: no loop iteration or branch gets to it under "
                     "these sizes and assumptions, so it checks nothing%s",
                     o->strict ? "" : " (an error under --strict)"))
      oom = 1;
  }
  /* a kernel whose assertions are all unreached proves nothing */
  if (!oom && nvac && nuser == 0)
    for (size_t i = first; i < (size_t)r->nasserts; i++)
      r->asserts[i].status = AG_TILE_VACUOUS;
  ag_vec_free(&all);
  if (oom)
    rc = AG_ENOMEM;
out:
  ag__ck_free(c);
  return rc;
}

int ag_tile_check(const ag_tile_program *p, const ag_tile_check_opts *o, ag_diags *d,
                  ag_tile_report **out) {
  *out = NULL;
  ag_tile_check_opts opts;
  memset(&opts, 0, sizeof opts);
  if (o)
    opts = *o;
  if (!opts.rlimit)
    opts.rlimit = 20000000;
  if (!opts.batch)
    opts.batch = 32;
  if (!opts.max_steps)
    opts.max_steps = AG_TILE_MAX_STEPS;
  if (!opts.max_writes)
    opts.max_writes = AG_TILE_MAX_WRITES;
  ag_tile_report *r = ag_calloc(1, sizeof *r);
  if (!r)
    return AG_ENOMEM;
  r->file = ag_strdup(p->file ? p->file : "<input>");
  if (!r->file) {
    ag_free(r);
    return AG_ENOMEM;
  }
  int rc = 0;
  for (int i = 0; i < p->top.n && !rc; i++) {
    if (p->top.v[i]->kind != AG_TN_KERNEL)
      continue;
    const ag_tile_node *k = p->top.v[i];
    for (int j = 0; j < i && !rc; j++) {
      const ag_tile_node *e = p->top.v[j];
      if (e->kind == AG_TN_KERNEL && !strcmp(e->name, k->name)) {
        size_t ll = 0;
        const char *src = ag_tile_srcline(p, k->line, &ll);
        rc = ag_diags_add(d, AG_SEV_ERROR, p->file, k->line, k->col, src, ll,
                          "kernel '%s' is defined twice (first at line %d); rename one",
                          k->name, e->line)
                 ? AG_ENOMEM
                 : AG_EPARSE;
      }
    }
    if (rc)
      break;
    r->nkernels++;
    rc = check_kernel(p, p->top.v[i], &opts, d, r);
  }
  if (!rc && r->nkernels == 0) {
    if (ag_diags_add(d, AG_SEV_ERROR, p->file, 1, 1, NULL, 0,
                     "no kernel in this file (a kernel is '@threads(N)' then 'def name(...):')"))
      rc = AG_ENOMEM;
    else
      rc = AG_EPARSE;
  }
  if (rc) {
    ag_tile_report_free(r);
    return rc;
  }
  qsort(r->asserts, (size_t)r->nasserts, sizeof *r->asserts, cmp_result);
  *out = r;
  return 0;
}

/* ------------------------------------------------------------- rendering */
static const char *status_name(ag_tile_status s) {
  return s == AG_TILE_PROVED     ? "proved"
         : s == AG_TILE_VIOLATED ? "violated"
         : s == AG_TILE_VACUOUS  ? "vacuous"
                                 : "unknown";
}

static void side_text(const char *label, const ag_tile_cex_side *s, ag_str *o) {
  if (s->expr && s->tag && !strcmp(s->expr, s->tag))
    ag_str_printf(o, "    %s %s", label, s->expr);
  else
    ag_str_printf(o, "    %s %s = %s", label, s->expr ? s->expr : "?", s->tag ? s->tag : "?");
  if (s->element)
    ag_str_printf(o, ", from %s", s->element);
  ag_str_putc(o, '\n');
  if (s->via)
    ag_str_printf(o, "          via %s\n", s->via);
  if (s->tag_other) {
    ag_str_printf(o, "          and also %s", s->tag_other);
    if (s->element_other)
      ag_str_printf(o, ", from %s", s->element_other);
    if (s->via_other)
      ag_str_printf(o, " via %s", s->via_other);
    ag_str_putc(o, '\n');
  }
}

static void cex_text(const ag_tile_cex *x, ag_str *o) {
  ag_str_printf(o,
                "    counterexample: blockIdx (%lld, %lld, %lld), threadIdx (%lld, %lld, %lld) "
                "(thread %lld: warp %lld, lane %lld)",
                (long long)x->block[0], (long long)x->block[1], (long long)x->block[2],
                (long long)x->tidx[0], (long long)x->tidx[1], (long long)x->tidx[2],
                (long long)x->thread, (long long)x->warp, (long long)x->lane);
  if (x->other >= 0)
    ag_str_printf(o, " and threadIdx (%lld, %lld, %lld) (thread %lld)",
                  (long long)x->other_tidx[0], (long long)x->other_tidx[1],
                  (long long)x->other_tidx[2], (long long)x->other);
  for (int k = 0; k < x->nsizes; k++)
    ag_str_printf(o, "%s %s=%lld", k ? "," : "; sizes", x->sizes[k].name,
                  (long long)x->sizes[k].value);
  for (int k = 0; k < x->nloops; k++)
    ag_str_printf(o, "%s %s=%lld", k ? "," : "; at", x->loops[k].name,
                  (long long)x->loops[k].value);
  ag_str_printf(o, "\n    %s\n", x->reason ? x->reason : "");
  if (x->lhs.expr || x->lhs.tag)
    side_text("left: ", &x->lhs, o);
  if (x->rhs.expr || x->rhs.tag)
    side_text("right:", &x->rhs, o);
}

int ag_tile_report_text(const ag_tile_report *r, ag_str *o) {
  int nv = 0, nu = 0, nvac = 0;
  for (int i = 0; i < r->nasserts; i++) {
    const ag_tile_assert_result *a = &r->asserts[i];
    nv += a->status == AG_TILE_VIOLATED;
    nu += a->status == AG_TILE_UNKNOWN;
    nvac += a->status == AG_TILE_VACUOUS;
    ag_str_printf(o, "%s:%d:%d: %s: %s", r->file, a->line, a->col, status_name(a->status),
                  a->text);
    ag_str_printf(o, "  [%s, %lld instance%s]\n", a->kernel, (long long)a->instances,
                  a->instances == 1 ? "" : "s");
    if (a->detail)
      ag_str_printf(o, "    %s\n", a->detail);
    if (a->violations > 1 || a->nmore)
      ag_str_printf(o, "    violated in %lld of %lld instance%s%s\n", (long long)a->violations,
                    (long long)a->instances, a->instances == 1 ? "" : "s",
                    a->nmore ? " (a counterexample for each)" : "");
    if (a->cex)
      cex_text(a->cex, o);
    for (int k = 0; k < a->nmore; k++)
      cex_text(a->more[k], o);
  }
  for (int i = 0; i < r->nloops; i++)
    ag_str_printf(o, "%s:%d:%d: summarized: loop '%s' [%s]: %s\n", r->file, r->loops[i].line,
                  r->loops[i].col, r->loops[i].var, r->loops[i].kernel, r->loops[i].how);
  if (r->bounds_proved)
    ag_str_printf(o, "in bounds: %lld access%s (every index within its mode, in every instance)\n",
                  (long long)r->bounds_proved, r->bounds_proved == 1 ? "" : "es");
  if (r->races_proved)
    ag_str_printf(o, "race-free: %lld shared write%s that other threads' accesses in the same "
                  "barrier interval may meet (none does: no write overtakes a read or a write, "
                  "no read misses a write)\n",
                  (long long)r->races_proved, r->races_proved == 1 ? "" : "s");
  ag_str_printf(o, "%s: %d assertion%s, %d violated, %d unknown", nv ? "FAIL"
                                                                : nvac ? "VACUOUS"
                                                                : nu   ? "UNKNOWN"
                                                                       : "OK",
                r->nasserts, r->nasserts == 1 ? "" : "s", nv, nu);
  if (nvac)
    ag_str_printf(o, ", %d never reached", nvac);
  ag_str_printf(o, " (%lld solver queries, %.2f s)\n", (long long)r->queries,
                r->interp_s + r->solve_s);
  return o->oom ? AG_ENOMEM : 0;
}

static json_t *side_json(const ag_tile_cex_side *s) {
  return json_pack("{s:s?,s:s?,s:s?,s:s?,s:s?,s:s?,s:s?}", "expr", s->expr, "tag", s->tag,
                   "element", s->element, "via", s->via, "tag_other", s->tag_other,
                   "element_other", s->element_other, "via_other", s->via_other);
}

static json_t *cex_json(const ag_tile_cex *x) {
  json_t *sizes = json_object(), *loops = json_object();
  for (int k = 0; sizes && k < x->nsizes; k++)
    json_object_set_new(sizes, x->sizes[k].name, json_integer(x->sizes[k].value));
  for (int k = 0; loops && k < x->nloops; k++)
    json_object_set_new(loops, x->loops[k].name, json_integer(x->loops[k].value));
  json_t *cj = json_pack("{s:[I,I,I],s:I,s:I,s:I,s:o,s:o,s:s?,s:o,s:o}", "block",
                         (json_int_t)x->block[0], (json_int_t)x->block[1],
                         (json_int_t)x->block[2], "thread", (json_int_t)x->thread, "warp",
                         (json_int_t)x->warp, "lane", (json_int_t)x->lane, "sizes", sizes,
                         "loops", loops, "reason", x->reason, "lhs", side_json(&x->lhs),
                         "rhs", side_json(&x->rhs));
  if (cj)
    json_object_set_new(cj, "threadIdx",
                        json_pack("[I,I,I]", (json_int_t)x->tidx[0], (json_int_t)x->tidx[1],
                                  (json_int_t)x->tidx[2]));
  if (cj && x->other >= 0)
    json_object_set_new(cj, "other",
                        json_pack("{s:I,s:[I,I,I]}", "thread", (json_int_t)x->other,
                                  "threadIdx", (json_int_t)x->other_tidx[0],
                                  (json_int_t)x->other_tidx[1], (json_int_t)x->other_tidx[2]));
  return cj;
}

json_t *ag_tile_report_json(const ag_tile_report *r) {
  json_t *arr = json_array();
  int nv = 0, nu = 0, nvac = 0;
  for (int i = 0; arr && i < r->nasserts; i++) {
    const ag_tile_assert_result *a = &r->asserts[i];
    nv += a->status == AG_TILE_VIOLATED;
    nu += a->status == AG_TILE_UNKNOWN;
    nvac += a->status == AG_TILE_VACUOUS;
    json_t *j = json_pack("{s:s,s:i,s:i,s:s,s:s,s:I,s:s?,s:b,s:b}", "kernel", a->kernel, "line",
                          a->line, "col", a->col, "text", a->text, "status",
                          status_name(a->status), "instances", (json_int_t)a->instances,
                          "detail", a->detail, "bounds", a->bounds, "race", a->race);
    if (j && a->cex) {
      json_t *cj = cex_json(a->cex);
      if (!cj || json_object_set_new(j, "counterexample", cj)) {
        json_decref(j);
        j = NULL;
      }
    }
    if (j && a->violations)
      json_object_set_new(j, "violations", json_integer((json_int_t)a->violations));
    if (j && a->nmore) {
      /* --all: every violating instance's counterexample, the first one too */
      json_t *all = json_array();
      json_array_append_new(all, cex_json(a->cex));
      for (int k = 0; all && k < a->nmore; k++)
        json_array_append_new(all, cex_json(a->more[k]));
      if (!all || json_object_set_new(j, "counterexamples", all)) {
        json_decref(j);
        j = NULL;
      }
    }
    if (!j || json_array_append_new(arr, j)) {
      json_decref(arr);
      return NULL;
    }
  }
  json_t *loops = json_array();
  for (int i = 0; arr && loops && i < r->nloops; i++)
    if (json_array_append_new(loops, json_pack("{s:s,s:i,s:i,s:s,s:s}", "kernel",
                                               r->loops[i].kernel, "line", r->loops[i].line,
                                               "col", r->loops[i].col, "var", r->loops[i].var,
                                               "summary", r->loops[i].how))) {
      json_decref(loops);
      loops = NULL;
    }
  if (!arr || !loops) {
    json_decref(arr);
    json_decref(loops);
    return NULL;
  }
  const char *verdict = nv ? "violated" : nvac ? "vacuous" : nu ? "unknown" : "proved";
  return json_pack("{s:i,s:s,s:s,s:o,s:o,s:{s:i,s:I,s:f,s:f,s:I,s:I}}", "schema", 1, "file",
                   r->file, "verdict", verdict, "assertions", arr, "summarized_loops", loops,
                   "stats", "kernels", r->nkernels, "queries", (json_int_t)r->queries,
                   "interpret_s", r->interp_s, "solve_s", r->solve_s, "bounds_proved",
                   (json_int_t)r->bounds_proved, "races_proved", (json_int_t)r->races_proved);
}

int ag_tile_check_opts_from_json(const json_t *j, ag_tile_check_opts *o) {
  memset(o, 0, sizeof *o);
  json_t *set = json_object_get(j, "set"), *sym = json_object_get(j, "symbolic");
  char **defs = ag_calloc(json_object_size(set) + 1, sizeof *defs);
  const char **syms = ag_calloc(json_array_size(sym) + 1, sizeof *syms);
  o->defines = (const char *const *)defs;
  o->symbolic = syms;
  if (!defs || !syms) {
    ag_tile_check_opts_release(o);
    return AG_ENOMEM;
  }
  const char *k;
  json_t *v;
  json_object_foreach(set, k, v) {
    ag_str d = AG_STR_INIT;
    ag_str_printf(&d, "%s=%lld", k, (long long)json_integer_value(v));
    if (!(defs[o->ndefines++] = ag_str_detach(&d))) {
      ag_tile_check_opts_release(o);
      return AG_ENOMEM;
    }
  }
  size_t i;
  json_array_foreach(sym, i, v) syms[o->nsymbolic++] = json_string_value(v);
  o->unroll = json_is_true(json_object_get(j, "unroll"));
  o->all = json_is_true(json_object_get(j, "all"));
  o->strict = json_is_true(json_object_get(j, "strict"));
  o->rlimit = (uint64_t)json_integer_value(json_object_get(j, "rlimit"));
  o->batch = (int)json_integer_value(json_object_get(j, "batch"));
  o->max_steps = json_integer_value(json_object_get(j, "max_steps"));
  o->max_writes = json_integer_value(json_object_get(j, "max_writes"));
  o->max_memory_mib = json_integer_value(json_object_get(j, "max_memory_mib"));
  return 0;
}

void ag_tile_check_opts_release(ag_tile_check_opts *o) {
  for (int i = 0; o->defines && i < o->ndefines; i++)
    ag_free((char *)o->defines[i]);
  ag_free((void *)o->defines);
  ag_free((void *)o->symbolic);
  memset(o, 0, sizeof *o);
}
