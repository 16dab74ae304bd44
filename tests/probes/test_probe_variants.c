/*
 * test_probe_variants.c — the async probes against real tools and brute
 * force: discovery finds every TMA load of examples/tma_probe (counted in the
 * PTX text) with its barrier; every probe variant of every async site of the
 * example kernels and the Triton corpus, and every traced variant with
 * waits, assembles with ptxas for sm_90a; the forced wait of a TMA load goes
 * after the last load on the same barrier (gemm's A and B share one
 * expect_tx); a deliberately broken probe variant fails ptxas; malformed
 * requests are errors that say why.
 */
#include "check.h"

#include <dirent.h>
#include <unistd.h>

#include "argus/evidence.h"
#include "argus/variant.h"
#include "../trace/trace_util.h"



static char *read_ptx(const char *path, size_t *len) {
  char *t = NULL;
  if (ag_file_read(path, &t, len)) {
    fprintf(stderr, "cannot read %s\n", path);
    return NULL;
  }
  return t;
}

static void corpus_path(char *p, size_t n, const char *rel, int src) {
  const char *sd = getenv("ARGUS_SOURCE_DIR"), *bd = getenv("ARGUS_BUILD_DIR");
  snprintf(p, n, "%s/%s", src ? (sd ? sd : ".") : (bd ? bd : "build"), rel);
}

static int discover(const char *ptx, size_t len, const char *name, ag_ptx_module **m,
                    ag_ptx_regions **r) {
  ag_diags d;
  ag_diags_init(&d);
  int rc = ag_ptx_parse(ptx, len, name, &d, m);
  if (!rc)
    rc = ag_ptx_discover(*m, &d, r);
  if (rc)
    tu_print_diags(&d);
  ag_diags_release(&d);
  return rc;
}

/* A corpus module, read and discovered. */
typedef struct mod {
  char path[1024];
  char *ptx;
  size_t len;
  ag_ptx_module *m;
  ag_ptx_regions *r;
} mod;

static int mod_open(mod *x, const char *rel, int src) {
  memset(x, 0, sizeof *x);
  corpus_path(x->path, sizeof x->path, rel, src);
  x->ptx = read_ptx(x->path, &x->len);
  CHECK(x->ptx != NULL);
  if (!x->ptx)
    return -1;
  int rc = discover(x->ptx, x->len, x->path, &x->m, &x->r);
  CHECK_EQ_INT(rc, 0);
  return rc;
}

static void mod_close(mod *x) {
  ag_ptx_module_free(x->m);
  ag_free(x->ptx);
  memset(x, 0, sizeof *x);
}

/* The op ID of the module's first site of kind k (in a loop when looped). */
static const char *first_site(const mod *x, ag_ptx_site_kind k, int looped) {
  for (int i = 0; x->r && i < x->r->nsites; i++)
    if (x->r->sites[i].kind == k && (!looped || x->r->sites[i].loop >= 0))
      return x->r->sites[i].op_id;
  return NULL;
}

/* The probe variant of (op, occurrence) of a module, or NULL (reported). */
static ag_variant *probe_of(const mod *x, const char *op, uint32_t occ, int wrong) {
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  ag_variant_async a = {0, op, occ, wrong};
  ag_variant *v = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(x->ptx, x->len, x->path, &po, &a, &d, &v), 0);
  if (!v)
    tu_print_diags(&d);
  ag_diags_release(&d);
  return v;
}

/* Every TMA load instruction of the text is a tma_load site with its
 * mbarrier operand (the instruction's last operand), the barrier variable
 * full_bar, and a done_by wait on the same variable. */
static void check_tma_loads(const char *rel, int expect) {
  mod x;
  if (mod_open(&x, rel, 0)) {
    mod_close(&x);
    return;
  }
  const char *ptx = x.ptx;
  const ag_ptx_regions *r = x.r;
  /* brute force: TMA loads in the text, each with its last operand */
  size_t text_loads = 0;
  for (const char *p = strstr(ptx, "cp.async.bulk.tensor"); p;
       p = strstr(p + 1, "cp.async.bulk.tensor")) {
    const char *eol = strchr(p, ';');
    if (!eol || !strstr(p, ".global.mbarrier") || strstr(p, ".global.mbarrier") > eol)
      continue;
    text_loads++;
    const char *lb = eol; /* the last '[' of the instruction */
    while (lb > p && *lb != '[')
      lb--;
    char operand[64];
    snprintf(operand, sizeof operand, "%.*s", (int)(eol - lb), lb);
    int line = 1;
    for (const char *q = ptx; q < p; q++)
      line += *q == '\n';
    int found = 0;
    for (int i = 0; r && i < r->nsites; i++) {
      const ag_ptx_site *s = &r->sites[i];
      if (s->kind != AG_PTX_SITE_TMA_LOAD || s->line != line)
        continue;
      found = 1;
      CHECK(s->has_bar);
      CHECK_EQ_STR(s->bar.operand, operand);
      CHECK_EQ_STR(s->bar.sym, "full_bar");
      CHECK(s->completion == AG_PTX_DONE_MBARRIER);
      CHECK(s->ndone_by >= 1);
      for (int k = 0; k < s->ndone_by; k++) {
        const ag_ptx_site *w = &r->sites[s->done_by[k]];
        CHECK(w->kind == AG_PTX_SITE_MBAR_WAIT);
        CHECK_EQ_STR(w->bar.sym, "full_bar");
      }
    }
    CHECK(found);
  }
  size_t sites = 0;
  for (int i = 0; r && i < r->nsites; i++)
    sites += r->sites[i].kind == AG_PTX_SITE_TMA_LOAD;
  CHECK_EQ_U64(sites, text_loads);
  if (expect >= 0)
    CHECK_EQ_U64(text_loads, (uint64_t)expect);
  mod_close(&x);
}

TEST(discovery_finds_every_tma_load) {
  check_tma_loads("tests/data/ptx/tma_probe.ptx", 2);
  check_tma_loads("tests/data/ptx/tma_probe_s1.ptx", 2);
  check_tma_loads("tests/data/ptx/gemm_tma.ptx", -1);
}

static int nvariants, nmodules;

static void probe_all(const char *path) {
  size_t len = 0;
  char *ptx = read_ptx(path, &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return;
  nmodules++;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  CHECK_EQ_INT(discover(ptx, len, path, &m, &r), 0);
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  for (int i = 0; r && i < r->nsites; i++) {
    const ag_ptx_site *s = &r->sites[i];
    if (!ag_probe_site_supported(s))
      continue;
    ag_variant_async a = {0, s->op_id, 1, 0};
    ag_variant *v = NULL;
    CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, &a, &d, &v), 0);
    if (!v)
      continue;
    char tag[2400];
    snprintf(tag, sizeof tag, "%s-%d", base, i);
    CHECK_EQ_INT(tu_assemble(v->ptx, v->len, tag), 0);
    nvariants++;
    /* one probe, one forced completion of the site's kind, one record */
    CHECK_EQ_U64(tu_count(v->ptx, "// argus: probe "), 1);
    CHECK_EQ_U64(tu_count(v->ptx, "$agp_done:"), 1);
    CHECK_EQ_U64(tu_count(v->ptx, "st.global.v4.u32 [%agt_a]"), 1);
    if (s->completion == AG_PTX_DONE_MBARRIER)
      CHECK_EQ_U64(tu_count(v->ptx, "mbarrier.test_wait.parity"), tu_count(ptx, "mbarrier.test_wait.parity") + 1);
    if (s->completion == AG_PTX_DONE_WGMMA_GROUP)
      CHECK_EQ_U64(tu_count(v->ptx, "wgmma.wait_group.sync.aligned 0;"),
                   tu_count(ptx, "wgmma.wait_group.sync.aligned 0;") + 1);
    if (s->completion == AG_PTX_DONE_CP_GROUP)
      CHECK_EQ_U64(tu_count(v->ptx, "cp.async.wait_group 0;"), tu_count(ptx, "cp.async.wait_group 0;") + 1);
    json_t *sites = json_object_get(v->probes, "sites");
    CHECK_EQ_U64(json_array_size(sites), 1);
    json_t *js = json_array_get(sites, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(js, "kind")), "async");
    CHECK_EQ_STR(json_string_value(json_object_get(js, "op_id")), s->op_id);
    CHECK_EQ_INT(json_integer_value(json_object_get(js, "occurrence")), 1);
    CHECK(strcmp(v->id, v->parent) != 0);
    ag_variant_free(v);
  }
  /* the reference with timed waits */
  ag_variant_opts tr = {AG_VARIANT_TRACED, NULL, 0, 0};
  ag_variant_async wa = {1, NULL, 0, 0};
  ag_variant *w = NULL;
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &tr, &wa, &d, &w), 0);
  if (w) {
    char tag[2400];
    snprintf(tag, sizeof tag, "%s-waits", base);
    CHECK_EQ_INT(tu_assemble(w->ptx, w->len, tag), 0);
    /* each timed wait is one synthetic region: a begin and an end marker */
    size_t begins = tu_count(w->ptx, "// @argus begin") - tu_count(ptx, "// @argus begin");
    size_t ends = tu_count(w->ptx, "// @argus end") - tu_count(ptx, "// @argus end");
    CHECK_EQ_U64(begins, ends);
    CHECK_EQ_U64(begins, tu_count(w->ptx, "// argus: begin " AG_EV_WAIT_PREFIX));
    if (!strcmp(base, "tma_probe.ptx"))
      CHECK_EQ_U64(begins, 2); /* the consumer's full_bar wait and its wgmma wait */
  }
  ag_variant_free(w);
  if (d.nerrors)
    tu_print_diags(&d);
  ag_diags_release(&d);
  ag_ptx_module_free(m);
  ag_free(ptx);
}

static void probe_dir(const char *dir) {
  DIR *dp = opendir(dir);
  CHECK(dp != NULL);
  if (!dp)
    return;
  struct dirent *e;
  while ((e = readdir(dp)))
    if (strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".ptx")) {
      char p[2048];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      probe_all(p);
    }
  closedir(dp);
}

TEST(every_probe_variant_assembles) {
  char p[1024];
  corpus_path(p, sizeof p, "tests/data/ptx", 0);
  probe_dir(p); /* the examples: tma_probe (3 and 1 stages), gemm_tma, overhead */
  corpus_path(p, sizeof p, "tests/data/ptx/triton", 1);
  probe_dir(p); /* Triton: cp.async + wgmma, TMA + mbarrier + wgmma, attention */
  CHECK(nmodules >= 8);
  CHECK(nvariants >= 90);
  printf("%d modules, %d probe variants assembled\n", nmodules, nvariants);
}

/* The forced wait of a TMA load follows the last load on its barrier in the
 * same straight-line code: brute force on the variant's text. */
static void check_wait_after_last_load(const char *rel, int src) {
  mod x;
  if (mod_open(&x, rel, src)) {
    mod_close(&x);
    return;
  }
  const char *ptx = x.ptx, *path = x.path;
  size_t len = x.len;
  const ag_ptx_regions *r = x.r;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  int checked = 0;
  for (int i = 0; r && i < r->nsites; i++) {
    const ag_ptx_site *s = &r->sites[i];
    if (s->kind != AG_PTX_SITE_TMA_LOAD)
      continue;
    /* the reference: the next TMA load on the same barrier operand before
     * any label, branch or mbarrier wait */
    const ag_ptx_site *last = s;
    for (ag_ptx_stmt *t = s->stmt->next; t; t = t->next) {
      if (t->kind == AG_PTX_LABEL ||
          (t->kind == AG_PTX_INSTR && (ag_ptx_op_is(t, "bra") || ag_ptx_op_is(t, "mbarrier.try_wait") ||
                                       ag_ptx_op_is(t, "ret"))))
        break;
      for (int k = 0; k < r->nsites; k++)
        if (r->sites[k].stmt == t && r->sites[k].kind == AG_PTX_SITE_TMA_LOAD &&
            !strcmp(r->sites[k].bar.operand, s->bar.operand))
          last = &r->sites[k];
    }
    ag_variant_async a = {0, s->op_id, 0, 0};
    ag_variant *v = NULL;
    CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, &a, &d, &v), 0);
    if (!v)
      continue;
    json_t *js = json_array_get(json_object_get(v->probes, "sites"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(js, "completion_line")), last->line);
    /* in the text: the wait label comes after the last load's instruction */
    const char *lastop = strstr(v->ptx, "$agp_wait:");
    size_t loads_before = 0;
    for (const char *p = strstr(v->ptx, "cp.async.bulk.tensor"); p && p < lastop;
         p = strstr(p + 1, "cp.async.bulk.tensor"))
      loads_before++;
    size_t want = 0;
    for (int k = 0; k < r->nsites; k++)
      if (r->sites[k].kind == AG_PTX_SITE_TMA_LOAD || r->sites[k].kind == AG_PTX_SITE_TMA_STORE)
        want += r->sites[k].line <= last->line;
    CHECK_EQ_U64(loads_before, want);
    checked++;
    ag_variant_free(v);
  }
  CHECK(checked >= 2);
  ag_diags_release(&d);
  mod_close(&x);
}

TEST(tma_wait_follows_the_last_load_on_the_barrier) {
  check_wait_after_last_load("tests/data/ptx/tma_probe.ptx", 0);
  check_wait_after_last_load("tests/data/ptx/triton/triton_matmul_tma_persistent.ptx", 1);
}

TEST(occurrence_source) {
  mod x;
  if (mod_open(&x, "tests/data/ptx/tma_probe.ptx", 0) == 0) {
    const char *load = first_site(&x, AG_PTX_SITE_TMA_LOAD, 0);
    CHECK(load != NULL);
    ag_variant *v = probe_of(&x, load, 5, 0);
    if (v) {
      json_t *js = json_array_get(json_object_get(v->probes, "sites"), 0);
      CHECK_EQ_STR(json_string_value(json_object_get(js, "occurrence_from")), "iteration");
      CHECK_EQ_STR(json_string_value(json_object_get(js, "iteration_region")),
                   "tma_probe/mainloop/loads");
      /* the loads region's iteration operand is copied at its begin marker */
      const char *bm = strstr(v->ptx, "@argus begin 1571128134944098478 loads ");
      CHECK(bm != NULL);
      if (bm)
        CHECK(strstr(bm, "mov.u32 %agp_it, %r") == strchr(strchr(bm, '\n') + 1, 'm'));
      CHECK(strstr(v->ptx, "setp.eq.u32 %agp_f, %agp_it, 5;") != NULL);
      CHECK(strstr(v->ptx, "add.u32 %agp_it, %agp_it, 1;") == NULL);
      CHECK(strstr(v->ptx, "selp.u32 %agp_par, 1, 0, %agp_w;") != NULL);
    }
    ag_variant_free(v);
    /* wrong phase: the deliberately wrong probe inverts the captured parity */
    v = probe_of(&x, load, 5, 1);
    if (v)
      CHECK(strstr(v->ptx, "selp.u32 %agp_par, 0, 1, %agp_w;") != NULL);
    ag_variant_free(v);
  }
  mod_close(&x);
  /* without an iterated region: the count of passes */
  if (mod_open(&x, "tests/data/ptx/triton/triton_matmul_pipelined.ptx", 1) == 0) {
    const char *cpa = first_site(&x, AG_PTX_SITE_CP_ASYNC, 1);
    CHECK(cpa != NULL);
    ag_variant *v = probe_of(&x, cpa, 3, 0);
    if (v) {
      json_t *js = json_array_get(json_object_get(v->probes, "sites"), 0);
      CHECK_EQ_STR(json_string_value(json_object_get(js, "occurrence_from")), "count");
      CHECK(strstr(v->ptx, "add.u32 %agp_it, %agp_it, 1;") != NULL);
      CHECK(strstr(v->ptx, "cp.async.commit_group;\n\tcp.async.wait_group 0;") != NULL);
    }
    ag_variant_free(v);
  }
  mod_close(&x);
}

TEST(broken_probe_variant_fails_ptxas) {
  mod x;
  ag_variant *v = NULL;
  if (mod_open(&x, "tests/data/ptx/tma_probe.ptx", 0) == 0 &&
      (v = probe_of(&x, first_site(&x, AG_PTX_SITE_TMA_LOAD, 0), 0, 0))) {
    CHECK_EQ_INT(tu_assemble(v->ptx, v->len, "unbroken"), 0);
    char *decl = strstr(v->ptx, ".reg .pred %agp_f");
    CHECK(decl != NULL);
    if (decl)
      memcpy(decl, "//", 2); /* the probe's predicates are gone */
    CHECK(tu_assemble(v->ptx, v->len, "broken") != 0);
  }
  ag_variant_free(v);
  mod_close(&x);
}

TEST(probe_errors) {
  char path[1024];
  corpus_path(path, sizeof path, "tests/data/ptx/tma_probe.ptx", 0);
  size_t len = 0;
  char *ptx = read_ptx(path, &len);
  CHECK(ptx != NULL);
  if (!ptx)
    return;
  ag_diags d;
  ag_diags_init(&d);
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  ag_variant *v = NULL;
  /* an unknown op ID: the error lists the probe sites */
  ag_variant_async a = {0, "deadbeef:7", 0, 0};
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, &a, &d, &v), AG_ENOTFOUND);
  CHECK(v == NULL);
  ag_str s = AG_STR_INIT;
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "no site 'deadbeef:7'");
  CHECK_CONTAINS(ag_str_cstr(&s), ": tma_load at line ");
  ag_str_clear(&s);
  ag_diags_release(&d);
  ag_diags_init(&d);
  /* no op at all */
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, NULL, &d, &v), AG_ENOTFOUND);
  ag_diags_release(&d);
  ag_diags_init(&d);
  /* a wait is not an async operation */
  ag_variant_async w = {0, "2f8440dedd58145c:0", 0, 0};
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, &w, &d, &v), AG_EUNSUPPORTED);
  ag_diags_format(&d, &s);
  CHECK_CONTAINS(ag_str_cstr(&s), "is a mbarrier_wait");
  ag_str_release(&s);
  ag_diags_release(&d);
  /* a module already probed */
  ag_diags_init(&d);
  ag_variant_async ok = {0, "2f8440dedd58145c:2", 0, 0};
  CHECK_EQ_INT(ag_variant_make_ex(ptx, len, path, &po, &ok, &d, &v), 0);
  ag_variant *v2 = NULL;
  if (v)
    CHECK(ag_variant_make_ex(v->ptx, v->len, path, &po, &ok, &d, &v2) != 0);
  ag_variant_free(v);
  ag_variant_free(v2);
  ag_diags_release(&d);
  ag_free(ptx);
}

RUN_TESTS(T(discovery_finds_every_tma_load), T(every_probe_variant_assembles),
          T(tma_wait_follows_the_last_load_on_the_barrier), T(occurrence_source),
          T(broken_probe_variant_fails_ptxas), T(probe_errors))
