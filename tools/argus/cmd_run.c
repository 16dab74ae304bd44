/*
 * cmd_run.c — `argus run FILE.tile --size NAME=V,...`: checks and lowers a
 * tile program (as argus lower), binds the sizes (refusing those that
 * violate an `assume`, before any launch), compiles it with NVRTC and runs
 * it on the GPU with seeded inputs; --check-ref compares with a reference,
 * --bench times it (docs/run.md). Exit 0: it ran (and matched); 1: it does
 * not check, a mismatch, a fault, a hang, no GPU; 2: bad input (malformed,
 * unknown size, a violated assumption).
 */
#include "argus/tile_check.h"
#include "argus/tile_run.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_run_opts[] = {
    {"kernel", 'k', "NAME", "run this kernel (default: the first of the file)"},
    {"size", 's', "NAME=V[,NAME=V...]", "problem sizes and const parameters (every size is needed; a list, or the option repeated)"},
    {"check-ref", 0, NULL, "compare the result with a reference (--ref)"},
    {"ref", 0, "auto|cpu|cublas|interp", "the reference (default auto: GEMMs cpu up to M*N*K = 2^30, else cublas; other kernels interp)"},
    {"bench", 0, NULL, "time the kernel (and cuBLAS beside a GEMM): L2 flushed, median of samples"},
    {"samples", 0, "N", "bench samples (default 50)"},
    {"warmup", 0, "N", "bench warm-up launches (default 5)"},
    {"seed", 0, "N", "the inputs' random seed (default 1)"},
    {"amplitude", 0, "A", "float inputs uniform in [-A, A) (default 0.5)"},
    {"timeout", 0, "S", "give up on a launch after S seconds (default 60)"},
    {"flops", 0, "EXPR", "FLOPs of one launch, over the sizes (default 2*M*N*K for a GEMM)"},
    {"unchecked", 0, NULL, "do not run the checker: run even a program whose assertions fail"},
    {"arch", 0, "SM", "the PTX target (default sm_90a)"},
    {0},
};

const char cmd_run_details[] =
    "Runs the checker first (as argus lower) and refuses a program that does not check\n"
    "unless --unchecked. Every size the kernel's tensors use needs a value; const\n"
    "parameters may be set the same way (--size M=4096,N=4096,K=4096 on gemm.tile). Sizes\n"
    "that violate an 'assume' are refused before launch, naming it. Inputs are seeded random\n"
    "values in the declared types. References: the value interpreter (the program run on the\n"
    "CPU, toy sizes), and for a GEMM-shaped kernel (A(M,K), B(N,K) -> C(M,N)) C = A*B^T in\n"
    "double on the CPU or with cuBLAS. See docs/run.md.";

static int parse_uint(const char *s, uint64_t *out) {
  char *end = NULL;
  if (!s || !s[0] || s[0] == '-')
    return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end)
    return -1;
  *out = v;
  return 0;
}

#if ARGUS_HAVE_TILE_EXEC /* the device's results (without the toolkit nothing runs) */
static void print_coord(const ag_tile_exec_result *r, const char *name) {
  printf("%s[", name);
  for (int i = 0; i < r->bad_rank; i++)
    printf("%s%llu", i ? ", " : "", (unsigned long long)r->first_bad[i]);
  printf("]");
}

static void print_timing(const char *what, const ag_tile_timing *t) {
  printf("  %-12s median %.4f ms  (p10 %.4f, p90 %.4f, min %.4f, max %.4f; %d samples)", what,
         t->median_ms, t->p10_ms, t->p90_ms, t->min_ms, t->max_ms, t->samples);
  if (t->tflops > 0)
    printf("  %.1f TFLOP/s (%.1f%% of the H200's %.0f bf16 peak)", t->tflops,
           100 * t->tflops / AG_H200_PEAK_BF16_TFLOPS, AG_H200_PEAK_BF16_TFLOPS);
  if (t->gbps > 0)
    printf("  %.0f GB/s of tensors (%.1f%% of %.0f)", t->gbps, 100 * t->gbps / AG_H200_PEAK_HBM_GBPS,
           AG_H200_PEAK_HBM_GBPS);
  printf("\n");
}

static json_t *timing_json(const ag_tile_timing *t) {
  return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "samples", t->samples, "median_ms",
                   t->median_ms, "p10_ms", t->p10_ms, "p90_ms", t->p90_ms, "min_ms", t->min_ms,
                   "max_ms", t->max_ms, "tflops", t->tflops, "gbps", t->gbps);
}
#endif

/* --flops EXPR over the sizes and the const parameters (given or default). */
static int flops_of(ag_cli *cli, const ag_tile_program *p, const ag_tile_lkernel *k,
                    const ag_tile_run_sizes *s, const char *expr, uint64_t *out) {
  const char *names[128];
  uint64_t vals[128];
  int n = 0;
  for (int i = 0; i < s->n && n < 128; i++, n++) {
    names[n] = s->names[i];
    vals[n] = s->vals[i];
  }
  char buf[128][64];
  for (int i = 0; i < s->ndefines && n < 128; i++, n++) {
    snprintf(buf[n], sizeof buf[n], "%s", s->defines[i]);
    char *eq = strchr(buf[n], '=');
    *eq = 0;
    names[n] = buf[n];
    vals[n] = strtoull(eq + 1, NULL, 10);
  }
  for (int i = 0; i < p->top.n; i++) { /* const defaults not given */
    const ag_tile_node *kn = p->top.v[i];
    if (kn->kind != AG_TN_KERNEL || strcmp(kn->name, k->name))
      continue;
    for (int j = 0; j < kn->list.n && n < 128; j++) {
      const ag_tile_node *prm = kn->list.v[j];
      if (prm->b && prm->b->kind == AG_TN_INT) {
        names[n] = prm->name;
        vals[n++] = (uint64_t)prm->b->ival;
      }
    }
  }
  char err[256];
  if (ag_tile_cexpr_eval(expr, names, vals, n, 64, out, err, sizeof err))
    return ag_cli_usage_error(cli, "--flops: %s", err);
  return 0;
}

int cmd_run(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, cli->npos ? "expected one FILE, got %d arguments"
                                             : "expected a FILE.tile to run%.0d",
                              cli->npos);
  ag_tile_exec_opts eo;
  memset(&eo, 0, sizeof eo);
  const char *refs = ag_cli_get(cli, "ref");
  eo.ref = ag_cli_flag(cli, "check-ref") || refs ? AG_TILE_REF_AUTO : AG_TILE_REF_NONE;
  if (refs && !strcmp(refs, "cpu"))
    eo.ref = AG_TILE_REF_CPU;
  else if (refs && !strcmp(refs, "cublas"))
    eo.ref = AG_TILE_REF_CUBLAS;
  else if (refs && !strcmp(refs, "interp"))
    eo.ref = AG_TILE_REF_INTERP;
  else if (refs && strcmp(refs, "auto"))
    return ag_cli_usage_error(cli, "--ref takes auto, cpu, cublas or interp, not '%s'", refs);
  eo.bench = ag_cli_flag(cli, "bench");
  uint64_t v;
  const char *o;
  if ((o = ag_cli_get(cli, "samples")) && (parse_uint(o, &v) || v < 1 || v > 100000))
    return ag_cli_usage_error(cli, "--samples takes an integer in 1..100000, not '%s'", o);
  eo.samples = o ? (int)v : 0;
  if ((o = ag_cli_get(cli, "warmup")) && (parse_uint(o, &v) || v < 1 || v > 10000))
    return ag_cli_usage_error(cli, "--warmup takes an integer in 1..10000, not '%s'", o);
  eo.warmup = o ? (int)v : 0;
  if ((o = ag_cli_get(cli, "seed")) && parse_uint(o, &v))
    return ag_cli_usage_error(cli, "--seed takes a non-negative integer, not '%s'", o);
  eo.seed = o ? v : 0;
  if ((o = ag_cli_get(cli, "amplitude"))) {
    char *end = NULL;
    eo.amplitude = strtod(o, &end);
    if (!o[0] || *end || !(eo.amplitude > 0 && eo.amplitude <= 1e6))
      return ag_cli_usage_error(cli, "--amplitude takes a number in (0, 1e6], not '%s'", o);
  }
  if ((o = ag_cli_get(cli, "timeout"))) {
    char *end = NULL;
    eo.timeout_s = strtod(o, &end);
    if (!o[0] || *end || !(eo.timeout_s > 0 && eo.timeout_s <= 86400))
      return ag_cli_usage_error(cli, "--timeout takes seconds in (0, 86400], not '%s'", o);
  }
  const char *file = cli->pos[0], *kname = ag_cli_get(cli, "kernel");
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  ag_tile_lowered *low = NULL;
  ag_tile_run_sizes sz;
  ag_tile_bound b;
  ag_str ptx = AG_STR_INIT;
  memset(&sz, 0, sizeof sz);
  memset(&b, 0, sizeof b);
  int exit_code = ag_cli_input_file(cli, file), rc;
  if (exit_code)
    goto out;
  /* the sizes first: which names are const parameters decides the defines */
  rc = ag_tile_parse_file(file, &d, &p);
  if (!rc)
    rc = ag_tile_run_sizes_parse(p, kname, ag_cli_get(cli, "size"), &d, &sz);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_input_exit(rc);
    goto out;
  }
  /* lowered first (fast), so sizes that violate an assumption are refused
   * before the checker runs (minutes at real sizes) */
  exit_code = ag_cli_lower_program(cli, file, p, (const char *const *)sz.defines, sz.ndefines,
                                   kname, 0, &low);
  if (exit_code)
    goto out;
  /* --kernel's, else the first of the file (ag_tile_lower keeps the file's order) */
  const ag_tile_lkernel *k = &low->kernels[0];
  rc = ag_tile_run_bind(p, k, &sz, &d, &b);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = rc == AG_ENOMEM ? ag_cli_fail(cli, rc, "binding the sizes failed")
                                : AG_EXIT_USAGE;
    goto out;
  }
  if ((o = ag_cli_get(cli, "flops")) && (exit_code = flops_of(cli, p, k, &sz, o, &eo.flops)))
    goto out;
  if (!ag_cli_flag(cli, "unchecked") &&
      (exit_code = ag_cli_check_program(cli, file, p, (const char *const *)sz.defines,
                                        sz.ndefines)))
    goto out;
  int cached = 0;
  rc = ag_tile_nvrtc_ptx(low->cuda, low->len, ag_cli_get(cli, "arch"), &d, &ptx, &cached);
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail(cli, rc, "compiling the lowered '%s' to PTX failed", file);
    goto out;
  }
#if ARGUS_HAVE_TILE_EXEC
  ag_tile_exec_result r;
  eo.prog = p;
  eo.defines = (const char *const *)sz.defines;
  eo.ndefines = sz.ndefines;
  rc = ag_tile_run_exec(&b, ag_str_cstr(&ptx), &eo, &r);
  if (rc) {
    exit_code = ag_cli_fail(cli, rc, "running '%s' of '%s': %s", k->name, file, r.err);
    goto out;
  }
  const char *cname = r.compared_param >= 0 ? k->params[r.compared_param].name
                      : r.ref_used ? "every tensor" : NULL;
  if (cli->json) {
    json_t *j = json_pack("{s:i,s:s,s:s,s:s,s:[i,i,i],s:[I,I,I],s:I}", "schema", 1, "file", file,
                          "kernel", k->name, "device", r.device, "grid", b.grid[0], b.grid[1],
                          b.grid[2], "block", (json_int_t)k->block[0], (json_int_t)k->block[1],
                          (json_int_t)k->block[2], "smem_bytes", (json_int_t)k->smem_bytes);
    if (j && cname) {
      json_t *fb = r.nbad ? json_array() : json_null();
      for (int i = 0; r.nbad && i < r.bad_rank; i++)
        json_array_append_new(fb, json_integer((json_int_t)r.first_bad[i]));
      json_object_set_new(j, "check",
                          json_pack("{s:s,s:s,s:I,s:I,s:f,s:f,s:f,s:o,s:f,s:f}", "reference",
                                    r.ref_used, "tensor", cname, "elements",
                                    (json_int_t)r.nelems, "mismatches", (json_int_t)r.nbad,
                                    "atol", r.atol, "rtol", r.rtol, "max_error", r.max_err,
                                    "first_mismatch", fb, "got", r.got, "expected", r.want));
    }
    if (j && eo.bench) {
      json_t *bj = json_pack("{s:o,s:i,s:i,s:i,s:i,s:i}", "kernel", timing_json(&r.kernel),
                             "sm_mhz", r.sm_mhz, "sm_mhz_max", r.sm_mhz_max, "mem_mhz",
                             r.mem_mhz, "mem_mhz_max", r.mem_mhz_max, "l2_flush_bytes",
                             2 * r.l2_bytes);
      if (bj && r.cublas.samples)
        json_object_set_new(bj, "cublas", timing_json(&r.cublas));
      json_object_set_new(j, "bench", bj);
    }
    if (j)
      ag_cli_print_json(j);
    json_decref(j);
  } else {
    printf("%s: %s on %s: grid (%u, %u, %u) x block (%lld, %lld, %lld), %lld B shared\n", file,
           k->name, r.device, b.grid[0], b.grid[1], b.grid[2], (long long)k->block[0],
           (long long)k->block[1], (long long)k->block[2], (long long)k->smem_bytes);
    if (cname && !r.nbad && r.compared_param < 0)
      printf("  check (%s reference): every tensor matches: %llu elements within the "
             "tolerance of its type (max error %.3g)\n",
             r.ref_used, (unsigned long long)r.nelems, r.max_err);
    else if (cname && !r.nbad)
      printf("  check (%s reference): %s matches: %llu elements within %g + %g*|ref| (max "
             "error %.3g)\n",
             r.ref_used, cname, (unsigned long long)r.nelems, r.atol, r.rtol, r.max_err);
    else if (cname) {
      printf("  check (%s reference): %s: %llu of %llu elements wrong (tolerance %g + "
             "%g*|ref|); first at ",
             r.ref_used, cname, (unsigned long long)r.nbad, (unsigned long long)r.nelems,
             r.atol, r.rtol);
      print_coord(&r, cname);
      printf(": got %.6g, expected %.6g\n", r.got, r.want);
    }
    if (eo.bench) {
      printf("  bench (L2 flushed with %d MiB before each sample):\n", 2 * r.l2_bytes >> 20);
      print_timing(k->name, &r.kernel);
      if (r.cublas.samples) {
        print_timing("cublas", &r.cublas);
        printf("  ratio %s / cublas: %.3f\n", k->name, r.cublas.median_ms / r.kernel.median_ms);
      }
      printf("  clocks after the samples: SM %d MHz (max %d), memory %d MHz (max %d)\n",
             r.sm_mhz, r.sm_mhz_max, r.mem_mhz, r.mem_mhz_max);
    }
  }
  exit_code = cname && r.nbad ? AG_EXIT_FAIL : AG_EXIT_OK;
  if (cname && r.nbad)
    ag_cli_error(cli, "'%s' of '%s' does not match the reference", k->name, file);
#else
  exit_code = ag_cli_fail(cli, AG_EUNSUPPORTED, "this argus was built without CUDA");
#endif
out:
  ag_str_release(&ptx);
  ag_tile_bound_release(&b);
  ag_tile_run_sizes_release(&sz);
  ag_tile_lowered_free(low);
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return exit_code;
}
