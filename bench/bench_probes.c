/*
 * bench_probes.c — the paper's multi-run workload (its Fig. 14c; issue 6):
 * examples/tma_probe (FP16 TMA matmul, 3 stages, 8-iteration K loop, two TMA
 * loads per iteration: 16 probe candidates). For N = 1, 2, 4, 8 probe
 * variants it measures, from nothing to synthesized values:
 *
 *   make the N forced-completion variants and compile them (in parallel, one
 *   thread per variant, nvJitLink, no cache), run them, synthesize, store
 *   every artifact in a fresh workspace (variant PTX, probe table, cubin,
 *   compiler report, evidence, harness log, values)
 *
 * two ways, side by side in one process: through one multi-variant GPU
 * worker (argus-worker: one process keeps its CUDA context and calls the
 * harness library per probe; started first so its CUDA initialization
 * overlaps the compiles), and with a harness process per probe (what a
 * runtime without the worker does). Reports seconds per probe and workspace
 * growth per probe (the workspace's size after the query, less an empty
 * workspace's, over N). Goal (issue 6): one probe <= 0.8 s, <= 0.25 s per
 * probe at 8, <= 0.25 MiB of workspace per probe. The paper: 2.95 / 3.69 /
 * 5.21 / 7.97 s and 2.08 MiB per probe.
 *
 *   bench_probes [ROUNDS]     (default 1; the best round of each cell counts)
 * Each goal prints its line (goal.h). Exit 77 without a GPU; 1 when a run
 * failed, the harness found wrong results or a goal is not met.
 */
#include "goal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argus/collect.h"
#include "argus/plan.h"
#include "argus/store.h"
#include "argus/synth.h"
#include "argus/variant.h"

static char *ptx;
static size_t ptxlen;
static json_t *disc;
static const char *loads[2];
static char harness[1024], library[1024];

typedef struct branch {
  int k;             /* candidate index: load k % 2, iteration k / 2 */
  const char *dir;   /* run directory of this query */
  ag_store *st;
  char out[1200], cubin[1300], sites[1300];
  char vid[65];
  int rc;
  double compile_s;
} branch;

static int put(ag_store *st, const void *data, size_t len, const char *kind) {
  char h[65];
  ag_put_opts po = {kind, 0};
  return ag_store_put(st, data, len, &po, h);
}

static void *make_one(void *arg) {
  branch *b = arg;
  uint64_t t0 = ag_now_ns();
  ag_diags d;
  ag_diags_init(&d);
  ag_variant *v = NULL;
  ag_cubin *c = NULL;
  ag_variant_opts po = {AG_VARIANT_PROBE, NULL, 0, 0};
  ag_variant_async a = {0, loads[b->k % 2], (uint32_t)(b->k / 2), 0};
  snprintf(b->out, sizeof b->out, "%s/probe%d", b->dir, b->k);
  snprintf(b->cubin, sizeof b->cubin, "%s/variant.cubin", b->out);
  snprintf(b->sites, sizeof b->sites, "%s/probes.json", b->out);
  b->rc = ag_variant_make_ex(ptx, ptxlen, "tma_probe", &po, &a, &d, &v);
  if (!b->rc)
    b->rc = ag_jit_compile(v->ptx, v->len, "tma_probe", NULL, &d, &c);
  char *js = NULL;
  json_t *res = NULL;
  char *rs = NULL;
  if (!b->rc) {
    js = json_dumps(v->probes, JSON_COMPACT);
    res = ag_cubin_to_json(c);
    rs = json_dumps(res, JSON_COMPACT);
    snprintf(b->vid, sizeof b->vid, "%s", v->id);
    b->rc = ag_mkdir_p(b->out, 0755) || ag_file_write_atomic(b->cubin, c->data, c->len) ||
            ag_file_write_atomic(b->sites, js, strlen(js)) ||
            put(b->st, v->ptx, v->len, "ptx") || put(b->st, js, strlen(js), "json") ||
            put(b->st, c->data, c->len, "cubin") || put(b->st, rs, strlen(rs), "json");
  }
  if (b->rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "probe %d: %s\n%s", b->k, ag_strerror(b->rc), ag_str_cstr(&s));
    ag_str_release(&s);
  }
  free(js);
  free(rs);
  json_decref(res);
  ag_variant_free(v);
  ag_cubin_free(c);
  ag_diags_release(&d);
  b->compile_s = (double)(ag_now_ns() - t0) / 1e9;
  return NULL;
}

static uint64_t dir_bytes(const char *path) {
  struct stat st;
  if (lstat(path, &st))
    return 0;
  if (!S_ISDIR(st.st_mode))
    return (uint64_t)st.st_size;
  uint64_t n = 0;
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    n += dir_bytes(p);
  }
  if (d)
    closedir(d);
  return n;
}

typedef struct cell {
  double total_s, compile_s, collect_s, synth_s;
  double mib_per_probe;
  int ok;
} cell;

/* One query of n probes, from nothing; use_worker: one worker, else a harness
 * process per probe. */
static cell query(int n, int use_worker, const char *base, int round) {
  cell c = {0};
  char dir[1024], ws[1100];
  snprintf(dir, sizeof dir, "%s/%s-%d-r%d", base, use_worker ? "worker" : "process", n, round);
  snprintf(ws, sizeof ws, "%s/ws", dir);
  ag_mkdir_p(dir, 0755);
  ag_store *st = NULL;
  if (ag_store_open(ws, AG_STORE_CREATE, &st))
    return c;
  ag_store_close(st);
  uint64_t empty = dir_bytes(ws);
  uint64_t t0 = ag_now_ns();
  ag_store_open(ws, AG_STORE_CREATE, &st);
  ag_worker *w = NULL;
  ag_str why = AG_STR_INIT;
  if (use_worker && ag_worker_start(NULL, &w, &why)) {
    fprintf(stderr, "worker: %s\n", ag_str_cstr(&why));
    ag_store_close(st);
    return c;
  }
  branch b[8];
  pthread_t th[8];
  for (int k = 0; k < n; k++) {
    memset(&b[k], 0, sizeof b[k]);
    b[k].k = k;
    b[k].dir = dir;
    b[k].st = st;
    pthread_create(&th[k], NULL, make_one, &b[k]);
  }
  for (int k = 0; k < n; k++)
    pthread_join(th[k], NULL);
  uint64_t t1 = ag_now_ns();
  int ok = 1;
  ag_evidence *ev[8];
  int nev = 0;
  for (int k = 0; k < n; k++) {
    if (b[k].rc) {
      ok = 0;
      continue;
    }
    const char *argv[] = {harness, "--m", "512", "--n", "512", "--k", "512", NULL};
    ag_trace_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.argv = argv;
    ro.cubin_path = b[k].cubin;
    ro.sites_path = b[k].sites;
    ro.variant_id = b[k].vid;
    ro.out_dir = b[k].out;
    ro.timeout_s = 60;
    ro.max_launches = 1;
    ro.skip_launches = AG_PROBE_LAUNCH;
    ro.device = -1;
    ag_trace_run_result res;
    ag_str_clear(&why);
    int rc = use_worker ? ag_worker_collect(w, library, &ro, &res, &why)
                        : ag_trace_run(&ro, &res, &why);
    if (rc) {
      fprintf(stderr, "probe %d: %s\n", k, ag_str_cstr(&why));
      ok = 0;
    } else {
      char h[65];
      ag_put_opts po = {"evidence", 0};
      ag_store_put_file(st, res.evidence_path, &po, h);
      po.kind = "log";
      ag_store_put_file(st, res.log_path, &po, h);
      ag_diags d;
      ag_diags_init(&d);
      if (ag_evidence_load(res.evidence_path, &d, &ev[nev]) == 0)
        nev++;
      else
        ok = 0;
      ag_diags_release(&d);
    }
    ag_trace_run_result_release(&res);
  }
  uint64_t t2 = ag_now_ns();
  json_t *out = NULL;
  if (ag_async_synth(disc, NULL, (const ag_evidence *const *)ev, nev, NULL, &out) == 0) {
    char *s = json_dumps(out, JSON_COMPACT);
    put(st, s, strlen(s), "json");
    free(s);
    /* every probe measured: one latency per CTA */
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(out, "instances"), i, x) ok &= json_integer_value(
        json_object_get(json_object_get(x, "latency"), "count")) == 32;
    ok &= (int)json_array_size(json_object_get(out, "instances")) == n;
  } else {
    ok = 0;
  }
  json_decref(out);
  for (int k = 0; k < nev; k++)
    ag_evidence_free(ev[k]);
  ag_store_close(st);
  uint64_t t3 = ag_now_ns();
  ag_worker_stop(w);
  ag_str_release(&why);
  c.total_s = (double)(t3 - t0) / 1e9;
  for (int k = 0; k < n; k++)
    c.compile_s = b[k].compile_s > c.compile_s ? b[k].compile_s : c.compile_s;
  c.compile_s = (double)(t1 - t0) / 1e9;
  c.collect_s = (double)(t2 - t1) / 1e9;
  c.synth_s = (double)(t3 - t2) / 1e9;
  c.mib_per_probe = (double)(dir_bytes(ws) - empty) / n / (1 << 20);
  c.ok = ok;
  return c;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1;
  if (rounds < 1)
    rounds = 1;
  ag_str why = AG_STR_INIT;
  if (ag_collect_gpu_probe(&why)) {
    printf("bench_probes: skipped: %s\n", ag_str_cstr(&why));
    ag_str_release(&why);
    return 77;
  }
  const char *bd = getenv("ARGUS_BUILD_DIR");
  char p[1024];
  snprintf(p, sizeof p, "%s/tests/data/ptx/tma_probe.ptx", bd ? bd : "build");
  snprintf(harness, sizeof harness, "%s/examples/tma_probe_harness", bd ? bd : "build");
  snprintf(library, sizeof library, "%s/examples/libtma_probe_harness.so", bd ? bd : "build");
  if (ag_file_read(p, (char **)&ptx, &ptxlen)) {
    fprintf(stderr, "cannot read %s\n", p);
    return 1;
  }
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  ag_ptx_regions *r = NULL;
  int nl = 0;
  if (ag_ptx_parse(ptx, ptxlen, p, &d, &m) == 0 && ag_ptx_discover(m, &d, &r) == 0) {
    disc = ag_ptx_regions_to_json(m, r);
    for (int i = 0; i < r->nsites; i++)
      if (r->sites[i].kind == AG_PTX_SITE_TMA_LOAD && nl < 2)
        loads[nl++] = ag_strdup(r->sites[i].op_id);
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  if (nl != 2) {
    fprintf(stderr, "tma_probe.ptx: expected 2 TMA loads, found %d\n", nl);
    return 1;
  }
  char base[] = "/tmp/argus-bench-probes-XXXXXX";
  if (!mkdtemp(base))
    return 1;
  json_t *info = NULL;
  printf("device: CUDA GPU; workload examples/tma_probe 512x512x512 FP16, 3 stages, 8 K "
         "iterations, 2 TMA loads each (16 candidates); %d round(s), best counts; %ld CPUs\n",
         rounds, sysconf(_SC_NPROCESSORS_ONLN));
  json_decref(info);
  static const int ns[] = {1, 2, 4, 8};
  cell best[2][4];
  int bad = 0;
  for (int mode = 0; mode < 2; mode++)
    for (int i = 0; i < 4; i++) {
      best[mode][i].total_s = 1e30;
      for (int rd = 0; rd < rounds; rd++) {
        cell c = query(ns[i], mode == 0, base, rd);
        bad |= !c.ok;
        if (c.total_s < best[mode][i].total_s)
          best[mode][i] = c;
      }
    }
  printf("%-7s | %-45s | %-31s\n", "probes", "one multi-variant worker (argus-worker)",
         "a harness process per probe");
  printf("%-7s | %8s %8s %8s %8s %9s | %8s %8s %11s\n", "N", "total s", "s/probe", "compile",
         "collect", "MiB/probe", "total s", "s/probe", "MiB/probe");
  for (int i = 0; i < 4; i++) {
    cell *a = &best[0][i], *b = &best[1][i];
    printf("%-7d | %8.3f %8.3f %8.3f %8.3f %9.3f | %8.3f %8.3f %11.3f\n", ns[i], a->total_s,
           a->total_s / ns[i], a->compile_s, a->collect_s, a->mib_per_probe, b->total_s,
           b->total_s / ns[i], b->mib_per_probe);
    printf("@json {\"bench\":\"bench_probes\",\"n\":%d,\"worker_s\":%.4f,\"worker_compile_s\":%.4f,"
           "\"worker_collect_s\":%.4f,\"worker_synth_s\":%.4f,\"worker_mib_per_probe\":%.4f,"
           "\"process_s\":%.4f,\"process_mib_per_probe\":%.4f}\n",
           ns[i], a->total_s, a->compile_s, a->collect_s, a->synth_s, a->mib_per_probe,
           b->total_s, b->mib_per_probe);
  }
  int met = bench_goal("one probe through the worker, end to end", best[0][0].total_s, 0, 0.8,
                       "s");
  met &= bench_goal("8 probes through the worker, per probe", best[0][3].total_s / 8, 0, 0.25,
                    "s");
  met &= bench_goal("workspace growth per probe at 8", best[0][3].mib_per_probe, 0, 0.25, "MiB");
  printf("checks: %s\n", bad ? "FAILED (a run failed or its results were wrong)"
                             : "every probed kernel's results matched the CPU reference; "
                               "every probe recorded 32 CTAs");
  const char *rm[] = {"rm", "-rf", base, NULL};
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = rm;
  ag_proc_result pr;
  ag_proc_run(&po, &pr);
  json_decref(disc);
  ag_free(ptx);
  ag_str_release(&why);
  return bad || !met ? 1 : 0;
}
