/*
 * test_build_fidelity.c — Argus measures the user's machine code. For every
 * example spec (examples/<dir>/spec*.json, examples/public/<dir>/spec*.json:
 * public kernels) and every spec of the CUDA
 * kernels in tests/data/cuda, the trace-free variant is built as observe
 * builds it (nvcc -ptx with the spec's flags and the markers on, the
 * trace-free transform, ptxas with the options ag_spec_ptxas_options reads
 * from `nvcc -dryrun`) and its code sections must be byte-identical to
 * `nvcc -cubin FLAGS -DARGUS_MARKERS=1` of the same source. The traced
 * variant is compiled with the same options and reports its spills.
 * Deliberately wrong cases: the same PTX compiled as relocatable code
 * (what nvJitLink does) and without the spec's ptxas options must differ
 * where the flags matter. And a spec's "production" build is compared in
 * `static`: identical, different (how), a compressed fatbin, garbage.
 * ARGUS_FIDELITY_SPECS=DIR adds the specs in DIR (kernels that may not be
 * committed). CPU only; exits 77 without nvcc / ptxas.
 */
#include "argus/collect.h"
#include "argus/observe.h"
#include "argus/report.h"
#include "argus/spec.h"
#include "argus/variant.h"
#include "check.h"
#include "corpus.h"

#include <dirent.h>
#include <unistd.h>

static char *nvcc, *srcdir;

static int nvcc_cubin(const ag_spec *s, const char *extra, const char *out) {
  char inc[4096];
  snprintf(inc, sizeof inc, "-I%s/include", srcdir);
  const char **argv = ag_calloc((size_t)s->nflags + 12, sizeof *argv);
  int a = 0;
  argv[a++] = nvcc;
  argv[a++] = "-cubin";
  for (int i = 0; i < s->nflags; i++)
    argv[a++] = s->flags[i];
  if (!s->nflags)
    argv[a++] = "-arch=sm_90a";
  if (extra)
    argv[a++] = extra;
  argv[a++] = inc;
  argv[a++] = "-o";
  argv[a++] = out;
  argv[a++] = s->cuda;
  argv[a] = NULL;
  ag_str err = AG_STR_INIT;
  int ok = run_capture(argv, NULL, &err, NULL) == 0;
  if (!ok)
    fprintf(stderr, "nvcc failed: %s\n", ag_str_cstr(&err));
  ag_str_release(&err);
  ag_free(argv);
  return ok;
}

static void read_file(const char *path, char **data, size_t *len) {
  *data = NULL;
  *len = 0;
  CHECK_EQ_INT(ag_file_read(path, data, len), 0);
}

/* The spec files to check: examples/<d>/spec*.json and the .json files of
 * tests/data/cuda. */
static void add_specs(corpus_list *l, const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 5 && !strcmp(e->d_name + n - 5, ".json") && !strncmp(e->d_name, prefix, strlen(prefix))) {
      ag_str p = AG_STR_INIT;
      ag_str_printf(&p, "%s/%s", dir, e->d_name);
      ag_vec_push(l, ag_str_detach(&p));
    }
  }
  closedir(d);
}

/* The spec*.json files of every subdirectory of dir. */
static void add_spec_dirs(corpus_list *l, const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    ag_str sub = AG_STR_INIT;
    ag_str_printf(&sub, "%s/%s", dir, e->d_name);
    add_specs(l, ag_str_cstr(&sub), "spec");
    ag_str_release(&sub);
  }
  if (d)
    closedir(d);
}

static corpus_list specs(void) {
  corpus_list l = {0};
  ag_str ex = AG_STR_INIT;
  ag_str_printf(&ex, "%s/examples", srcdir);
  add_spec_dirs(&l, ag_str_cstr(&ex));
  /* public kernels (examples/public/<d>/spec*.json: their licences there) */
  ag_str_printf(&ex, "/public");
  add_spec_dirs(&l, ag_str_cstr(&ex));
  ag_str_clear(&ex);
  ag_str_printf(&ex, "%s/tests/data/cuda", srcdir);
  add_specs(&l, ag_str_cstr(&ex), "");
  ag_str_release(&ex);
  /* kernels kept out of the tree (public ones: docs/build-fidelity.md) */
  const char *extra = getenv("ARGUS_FIDELITY_SPECS");
  if (extra && *extra)
    add_specs(&l, extra, "");
  return l;
}

/* Compiles the spec's trace-free (and traced) variant as observe does;
 * returns the trace-free cubin (owned) and its PTX in *ptx. */
static ag_cubin *build_variant(const ag_spec *s, ag_variant_kind kind, ag_str *ptx,
                               char ***opts) {
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *c = NULL;
  ag_variant *v = NULL;
  char target[16];
  if (!ptx->len)
    CHECK_EQ_INT(ag_spec_compile_ptx(s->cuda, (const char *const *)s->flags, &d, ptx), 0);
  CHECK_EQ_INT(ag_jit_target(ptx->p, ptx->len, target), 0);
  if (!*opts)
    CHECK_EQ_INT(ag_spec_ptxas_options(s->cuda, (const char *const *)s->flags, target, &d, opts),
                 0);
  ag_variant_opts vo = {kind, NULL, 0, 0};
  CHECK_EQ_INT(ag_variant_make(ptx->p, ptx->len, s->name, &vo, &d, &v), 0);
  if (v && *opts)
    CHECK_EQ_INT(ag_jit_compile_ex(v->ptx, v->len, s->name, NULL, (const char *const *)*opts,
                                   &d, &c),
                 0);
  if (d.items.n) {
    ag_str m = AG_STR_INIT;
    ag_diags_format(&d, &m);
    fprintf(stderr, "%s", ag_str_cstr(&m));
    ag_str_release(&m);
  }
  ag_variant_free(v);
  ag_diags_release(&d);
  return c;
}

static void setup(void) {
  if (nvcc)
    return;
  nvcc = cuda_tool("nvcc");
  char *ptxas = ag_jit_ptxas();
  if (!nvcc || !ptxas) {
    printf("no nvcc or ptxas: skipped\n");
    exit(77);
  }
  ag_free(ptxas);
  srcdir = getenv("ARGUS_SOURCE_DIR");
  if (!srcdir) {
    printf("ARGUS_SOURCE_DIR is not set: skipped\n");
    exit(77);
  }
}

static int nspecs, ntext;

static void check_spec(const char *path) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = NULL;
  CHECK_EQ_INT(ag_spec_load(path, &d, &s), 0);
  ag_diags_release(&d);
  if (!s || !s->cuda) {
    ag_spec_free(s);
    return;
  }
  ag_str ptx = AG_STR_INIT;
  char **opts = NULL;
  ag_cubin *c = build_variant(s, AG_VARIANT_TRACE_FREE, &ptx, &opts);
  char ref[] = "/tmp/argus-fid-XXXXXX";
  close(mkstemp(ref));
  CHECK(nvcc_cubin(s, "-DARGUS_MARKERS=1", ref));
  char *rd = NULL;
  size_t rl = 0;
  read_file(ref, &rd, &rl);
  if (c && rd) {
    ag_build_cmp cmp;
    CHECK_EQ_INT(ag_build_compare(c->data, c->len, rd, rl, c->arch, &cmp), 0);
    ag_str o = AG_STR_INIT;
    for (int i = 0; c->options[i]; i++)
      ag_str_printf(&o, " %s", c->options[i]);
    printf("%s: ptxas%s: %s\n",
           strncmp(path, srcdir, strlen(srcdir)) ? path : path + strlen(srcdir) + 1,
           ag_str_cstr(&o),
           ag_str_cstr(&cmp.summary));
    if (!cmp.identical)
      fprintf(stderr, "FAIL %s: trace-free build is not nvcc's: %s\n", path,
              ag_str_cstr(&cmp.summary));
    CHECK(cmp.identical);
    ntext += cmp.identical;
    int regs = 0; /* the log is ptxas's: registers of the kernels, spills of all */
    for (int i = 0; i < c->nfuncs; i++) {
      regs += c->funcs[i].registers > 0;
      CHECK(c->funcs[i].spill_store_bytes >= 0 && c->funcs[i].spill_load_bytes >= 0);
    }
    CHECK(regs >= 1);
    ag_str_release(&o);
    ag_str_release(&cmp.summary);
  }
  /* the traced variant: same options, and its spills are read (not -1) */
  ag_cubin *t = build_variant(s, AG_VARIANT_TRACED, &ptx, &opts);
  if (t && c) {
    CHECK_EQ_INT(t->nfuncs, c->nfuncs);
    for (int i = 0; c->options[i] || t->options[i]; i++) {
      CHECK(c->options[i] && t->options[i]);
      if (!c->options[i] || !t->options[i])
        break;
      CHECK_EQ_STR(t->options[i], c->options[i]);
    }
    for (int i = 0; i < t->nfuncs; i++) {
      CHECK(t->funcs[i].spill_store_bytes >= 0);
      CHECK(t->funcs[i].spill_load_bytes >= 0);
      CHECK(t->funcs[i].stack_bytes >= 0);
    }
  }
  nspecs++;
  ag_cubin_free(t);
  ag_cubin_free(c);
  ag_free(rd);
  unlink(ref);
  ag_spec_options_free(opts);
  ag_str_release(&ptx);
  ag_spec_free(s);
}

TEST(trace_free_is_nvcc_build) {
  setup();
  corpus_list l = specs();
  for (size_t i = 0; i < l.n; i++)
    check_spec(l.v[i]);
  printf("%d specs, %d byte-identical\n", nspecs, ntext);
  CHECK(nspecs >= 9); /* 4 example specs, 6 in tests/data/cuda */
  CHECK_EQ_INT(ntext, nspecs);
  corpus_free(&l);
}

static ag_spec *load(const char *rel) {
  ag_str p = AG_STR_INIT;
  ag_str_printf(&p, "%s/%s", srcdir, rel);
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = NULL;
  CHECK_EQ_INT(ag_spec_load(ag_str_cstr(&p), &d, &s), 0);
  ag_diags_release(&d);
  ag_str_release(&p);
  return s;
}

/* Deliberately wrong: relocatable code (nvJitLink's PTX mode) and a build
 * without the spec's options are other machine code, and say so. */
TEST(other_builds_differ) {
  setup();
  ag_spec *s = load("tests/data/cuda/sgemm_warptile.json");
  ag_spec *mr = load("tests/data/cuda/sgemm_maxrreg.json");
  ag_spec *hw = load("tests/data/cuda/hopper_ws.json");
  if (!s || !mr || !hw)
    goto out;
  ag_str ptx = AG_STR_INIT;
  char **opts = NULL;
  ag_cubin *whole = build_variant(s, AG_VARIANT_TRACE_FREE, &ptx, &opts);
  ag_diags d;
  ag_diags_init(&d);
  const char *reloc[] = {"-arch=sm_90a", "-m64", "--compile-only", NULL};
  ag_cubin *rc = NULL;
  CHECK_EQ_INT(ag_jit_compile_ex(ptx.p, ptx.len, "sgemm", NULL, reloc, &d, &rc), 0);
  if (whole && rc) {
    ag_build_cmp cmp;
    CHECK_EQ_INT(ag_build_compare(rc->data, rc->len, whole->data, whole->len, "sm_90a", &cmp), 0);
    printf("relocatable against whole program: %s\n", ag_str_cstr(&cmp.summary));
    CHECK(!cmp.identical);
    CHECK_CONTAINS(ag_str_cstr(&cmp.summary), "registers against");
    CHECK(rc->funcs[0].registers > whole->funcs[0].registers);
    ag_str_release(&cmp.summary);
    json_t *j = ag_cubin_to_json(rc);
    CHECK(json_is_false(json_object_get(json_object_get(j, "build"), "whole_program")));
    json_decref(j);
  }
  ag_cubin_free(rc);
  /* -maxrregcount: the spec's option is what caps the registers */
  ag_str mptx = AG_STR_INIT;
  char **mopts = NULL;
  ag_cubin *capped = build_variant(mr, AG_VARIANT_TRACE_FREE, &mptx, &mopts);
  int found = 0;
  for (int i = 0; mopts && mopts[i]; i++)
    found |= !strcmp(mopts[i], "-maxrregcount=128");
  CHECK(found);
  if (capped && whole) {
    CHECK(capped->funcs[0].registers <= 128);
    CHECK(whole->funcs[0].registers > 128);
    CHECK(capped->funcs[0].spill_store_bytes > 0); /* the cap costs spills */
  }
  /* setmaxnreg and aligned dynamic shared memory: relocatable code loses both */
  ag_str hptx = AG_STR_INIT;
  char **hopts = NULL;
  ag_cubin *hwc = build_variant(hw, AG_VARIANT_TRACE_FREE, &hptx, &hopts);
  ag_cubin *hrc = NULL;
  CHECK_EQ_INT(ag_jit_compile_ex(hptx.p, hptx.len, "hopper_ws", NULL, reloc, &d, &hrc), 0);
  if (hwc && hrc) {
    printf("hopper_ws: whole program %d registers, %d bytes smem; relocatable %d, %d\n",
           hwc->funcs[0].registers, hwc->funcs[0].smem_bytes, hrc->funcs[0].registers,
           hrc->funcs[0].smem_bytes);
    CHECK(hwc->funcs[0].smem_bytes != hrc->funcs[0].smem_bytes);
    CHECK(hwc->funcs[0].registers != hrc->funcs[0].registers);
  }
  ag_cubin_free(hwc);
  ag_cubin_free(hrc);
  ag_cubin_free(capped);
  ag_cubin_free(whole);
  ag_spec_options_free(opts);
  ag_spec_options_free(mopts);
  ag_spec_options_free(hopts);
  ag_str_release(&ptx);
  ag_str_release(&mptx);
  ag_str_release(&hptx);
  ag_diags_release(&d);
out:
  ag_spec_free(s);
  ag_spec_free(mr);
  ag_spec_free(hw);
}

/* ag_spec_ptxas_options reads nvcc's own ptxas step, and refuses what it
 * cannot map to one build. */
TEST(ptxas_options_from_nvcc) {
  setup();
  ag_spec *s = load("tests/data/cuda/sgemm_xptxas.json");
  if (!s)
    return;
  ag_diags d;
  ag_diags_init(&d);
  char **o = NULL;
  CHECK_EQ_INT(ag_spec_ptxas_options(s->cuda, (const char *const *)s->flags, "sm_90", &d, &o), 0);
  ag_str all = AG_STR_INIT;
  for (int i = 0; o && o[i]; i++)
    ag_str_printf(&all, "%s ", o[i]);
  CHECK_CONTAINS(ag_str_cstr(&all), "-arch=sm_90 ");
  CHECK_CONTAINS(ag_str_cstr(&all), "-O2 ");
  CHECK_CONTAINS(ag_str_cstr(&all), "-warn-spills ");
  CHECK_CONTAINS(ag_str_cstr(&all), "--generate-line-info ");
  CHECK(!strstr(ag_str_cstr(&all), ".ptx") && !strstr(ag_str_cstr(&all), "-o "));
  ag_spec_options_free(o);
  ag_str_release(&all);
  /* two architectures: which build is the user's? */
  const char *two[] = {"-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_80,code=sm_80",
                       NULL};
  o = NULL;
  int rc = ag_spec_ptxas_options(s->cuda, two, "sm_89", &d, &o);
  CHECK(rc != 0 && o == NULL);
  ag_str m = AG_STR_INIT;
  ag_diags_format(&d, &m);
  CHECK(strstr(ag_str_cstr(&m), "other architectures") || strstr(ag_str_cstr(&m), "nvcc -dryrun failed"));
  ag_str_release(&m);
  ag_diags_release(&d);
  ag_spec_free(s);
}

/* --------------------------------------------- the spec's production */

static char ws[64];

/* All the overhead specs have one name and module: only their production
 * differs, so the memo key must tell them apart. */
static void write_spec_for(const char *file, const char *cu, const char *flags,
                           const char *production) {
  ag_str s = AG_STR_INIT, p = AG_STR_INIT;
  ag_str_printf(&s,
                "{\"name\": \"%s\", \"module\": {\"cuda\": \"%s/%s\", "
                "\"flags\": [%s], \"production\": \"%s\"}}",
                strstr(cu, "overhead") ? "overhead" : "sgemm", srcdir, cu, flags, production);
  ag_str_printf(&p, "%s/%s", ws, file);
  CHECK_EQ_INT(ag_file_write_atomic(ag_str_cstr(&p), s.p, s.len), 0);
  ag_str_release(&s);
  ag_str_release(&p);
}

static void write_spec(const char *name, const char *production) {
  write_spec_for(name, "examples/overhead/overhead.cu", "\"-arch=sm_90a\"", production);
}

/* `static` on a spec with a production build; returns the report's text. */
static void observe_static_region(const char *spec, const char *region, ag_str *text,
                                  int *rc) {
  char sp[256], wsdir[128];
  snprintf(sp, sizeof sp, "%s/%s", ws, spec);
  snprintf(wsdir, sizeof wsdir, "%s/.argus", ws);
  static const char *sigs[] = {"static"};
  ag_observe_opts o = {.spec = sp, .workspace = wsdir, .region = region,
                       .signals = sigs, .nsignals = 1, .ndevices = 0, .timeout_s = 30};
  ag_diags d;
  ag_diags_init(&d);
  ag_observe_result r;
  *rc = ag_observe(&o, &d, &r);
  if (*rc)
    ag_diags_format(&d, text);
  else if (r.report)
    ag_report_json_text(r.report, text);
  ag_observe_result_release(&r);
  ag_diags_release(&d);
}

static void observe_static(const char *spec, ag_str *text, int *rc) {
  observe_static_region(spec, "overhead_compute", text, rc);
}

TEST(production_is_compared) {
  setup();
  snprintf(ws, sizeof ws, "/tmp/argus-fidws-XXXXXX");
  CHECK(mkdtemp(ws) != NULL);
  ag_spec *s = load("examples/overhead/spec.json");
  if (!s)
    return;
  char same[256], prod[256], fat[256], fatz[256], junk[256];
  snprintf(same, sizeof same, "%s/same.cubin", ws);
  snprintf(prod, sizeof prod, "%s/prod.cubin", ws);
  snprintf(fat, sizeof fat, "%s/prod.fatbin", ws);
  snprintf(fatz, sizeof fatz, "%s/prodz.fatbin", ws);
  snprintf(junk, sizeof junk, "%s/junk.cubin", ws);
  CHECK(nvcc_cubin(s, "-DARGUS_MARKERS=1", same));
  CHECK(nvcc_cubin(s, NULL, prod)); /* the user's build: markers off */
  {
    char inc[4096];
    snprintf(inc, sizeof inc, "-I%s/include", srcdir);
    const char *a1[] = {nvcc, "-fatbin", "-arch=sm_90a", "-DARGUS_MARKERS=1", "-compress-mode=none",
                        inc, "-o", fat, s->cuda, NULL};
    const char *a2[] = {nvcc, "-fatbin", "-arch=sm_90a", "-DARGUS_MARKERS=1", "-compress-mode=size",
                        inc, "-o", fatz, s->cuda, NULL};
    CHECK_EQ_INT(run_capture(a1, NULL, NULL, NULL), 0);
    CHECK_EQ_INT(run_capture(a2, NULL, NULL, NULL), 0);
  }
  CHECK_EQ_INT(ag_file_write_atomic(junk, "not a cubin", 11), 0);
  write_spec("same.json", same);
  write_spec("prod.json", prod);
  write_spec("fat.json", fat);
  write_spec("fatz.json", fatz);
  write_spec("junk.json", junk);
  write_spec("gone.json", "/nonexistent/prod.cubin");
  ag_str t = AG_STR_INIT;
  int rc;
  observe_static("same.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  printf("%s", ag_str_cstr(&t));
  CHECK_CONTAINS(ag_str_cstr(&t), "static       build      ptxas ");
  CHECK_CONTAINS(ag_str_cstr(&t), "whole program: as nvcc -cubin -arch=sm_90a");
  CHECK_CONTAINS(ag_str_cstr(&t), "production matches");
  CHECK_CONTAINS(ag_str_cstr(&t), "identical code (2 functions)");
  ag_str_clear(&t);
  observe_static("prod.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  printf("%s", ag_str_cstr(&t));
  CHECK_CONTAINS(ag_str_cstr(&t), "production warning: the measured build differs from");
  CHECK_CONTAINS(ag_str_cstr(&t), "instruction words differ");
  ag_str_clear(&t);
  observe_static("fat.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "production matches");
  ag_str_clear(&t);
  observe_static("fatz.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  printf("%s", ag_str_cstr(&t));
  CHECK_CONTAINS(ag_str_cstr(&t), "warning: cannot compare with");
  CHECK_CONTAINS(ag_str_cstr(&t), "compressed: build it with -compress-mode=none");
  ag_str_clear(&t);
  observe_static("junk.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "neither a cubin (ELF) nor a fatbin");
  ag_str_clear(&t);
  observe_static("gone.json", &t, &rc);
  CHECK(rc != 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "cannot read the production build '/nonexistent/prod.cubin'");
  ag_spec_free(s);
  /* observe compiles with the spec's options: -maxrregcount matches only so */
  ag_spec *mr = load("tests/data/cuda/sgemm_maxrreg.json");
  char mprod[256];
  snprintf(mprod, sizeof mprod, "%s/maxrreg.cubin", ws);
  if (mr && nvcc_cubin(mr, "-DARGUS_MARKERS=1", mprod)) {
    write_spec_for("mr.json", "tests/data/cuda/sgemm_warptile.cu",
                   "\"-arch=sm_90a\", \"-maxrregcount=128\", \"-DSGEMM_NO_BOUNDS\"", mprod);
    ag_str m = AG_STR_INIT;
    observe_static_region("mr.json", "sgemm_warptile", &m, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_CONTAINS(ag_str_cstr(&m), "-maxrregcount=128, whole program");
    CHECK_CONTAINS(ag_str_cstr(&m), "production matches");
    ag_str_release(&m);
  }
  ag_spec_free(mr);
  /* no "production": compared with the module built without markers */
  ag_str np = AG_STR_INIT, sp = AG_STR_INIT;
  ag_str_printf(&np, "%s/noprod.json", ws);
  ag_str_printf(&sp, "{\"name\": \"overhead\", \"module\": {\"cuda\": "
                     "\"%s/examples/overhead/overhead.cu\", \"flags\": [\"-arch=sm_90a\"]}}",
                srcdir);
  CHECK_EQ_INT(ag_file_write_atomic(ag_str_cstr(&np), sp.p, sp.len), 0);
  ag_str_clear(&t);
  observe_static("noprod.json", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  printf("%s", ag_str_cstr(&t));
  CHECK_CONTAINS(ag_str_cstr(&t), "production warning: the measured build differs from the "
                                  "user's build (nvcc -cubin -arch=sm_90a, markers off)");
  CHECK_CONTAINS(ag_str_cstr(&t), "24 of 40 instruction words differ");
  CHECK_CONTAINS(ag_str_cstr(&t), "the markers' asm comments moved code");
  ag_str_clear(&sp);
  ag_str_printf(&sp, "{\"name\": \"sgemm\", \"module\": {\"cuda\": "
                     "\"%s/tests/data/cuda/sgemm_warptile.cu\", \"flags\": [\"-arch=sm_90a\"]}}",
                srcdir);
  CHECK_EQ_INT(ag_file_write_atomic(ag_str_cstr(&np), sp.p, sp.len), 0);
  ag_str_clear(&t);
  observe_static_region("noprod.json", "sgemm_warptile", &t, &rc);
  CHECK_EQ_INT(rc, 0);
  CHECK_CONTAINS(ag_str_cstr(&t), "production matches the user's build (nvcc -cubin "
                                  "-arch=sm_90a, markers off): identical code (1 function)");
  ag_str_release(&t);
  ag_str_release(&np);
  ag_str_release(&sp);
  const char *rm[] = {"rm", "-rf", ws, NULL};
  run_capture(rm, NULL, NULL, NULL);
}

/* "production" in a spec: a file name, resolved against the spec's directory */
TEST(production_in_spec) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *s = NULL;
  CHECK_EQ_INT(ag_spec_load_str("{\"name\": \"k\", \"module\": {\"cuda\": \"k.cu\", "
                                "\"production\": \"out/k.cubin\"}}",
                                "/x/y/spec.json", &d, &s),
               0);
  CHECK(s && s->production && !strcmp(s->production, "/x/y/out/k.cubin"));
  ag_spec_free(s);
  s = NULL;
  CHECK_EQ_INT(ag_spec_load_str("{\"name\": \"k\",\n \"module\": {\"cuda\": \"k.cu\", "
                                "\"production\": 3}}",
                                "spec.json", &d, &s),
               AG_EPARSE);
  CHECK(s == NULL);
  ag_str m = AG_STR_INIT;
  ag_diags_format(&d, &m);
  CHECK_CONTAINS(ag_str_cstr(&m), "spec.json:2:");
  CHECK_CONTAINS(ag_str_cstr(&m), "\"production\" must be a file name (string)");
  ag_str_release(&m);
  ag_diags_release(&d);
}

/* no ptxas, a bad nvcc flag: clear errors, nothing compiled */
TEST(toolchain_errors) {
  setup();
  ag_diags d;
  ag_diags_init(&d);
  ag_cubin *c = NULL;
  const char *ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n";
  setenv("ARGUS_PTXAS", "/nonexistent/ptxas", 1);
  CHECK_EQ_INT(ag_jit_compile(ptx, strlen(ptx), "t.ptx", NULL, &d, &c), AG_ENOTFOUND);
  unsetenv("ARGUS_PTXAS");
  CHECK(c == NULL);
  ag_str m = AG_STR_INIT;
  ag_diags_format(&d, &m);
  CHECK_CONTAINS(ag_str_cstr(&m), "cannot compile: no ptxas found (set ARGUS_PTXAS");
  ag_diags_release(&d);
  ag_diags_init(&d);
  char cu[4096];
  snprintf(cu, sizeof cu, "%s/examples/overhead/overhead.cu", srcdir);
  const char *bad[] = {"-arch=sm_90a", "--no-such-flag", NULL};
  char **o = NULL;
  CHECK(ag_spec_ptxas_options(cu, bad, "sm_90a", &d, &o) != 0);
  CHECK(o == NULL);
  ag_str_clear(&m);
  ag_diags_format(&d, &m);
  CHECK_CONTAINS(ag_str_cstr(&m), "nvcc -dryrun failed");
  CHECK_CONTAINS(ag_str_cstr(&m), "no-such-flag");
  ag_str_release(&m);
  ag_diags_release(&d);
}

RUN_TESTS(T(production_in_spec), T(toolchain_errors), T(trace_free_is_nvcc_build), T(other_builds_differ), T(ptxas_options_from_nvcc),
          T(production_is_compared))
