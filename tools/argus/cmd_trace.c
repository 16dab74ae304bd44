/*
 * cmd_trace.c — `argus trace SPEC [--region R] [--scope k=v,...]`: builds the
 * traced variant of the spec's module, compiles it with ptxas and the
 * options of the user's build (docs/build-fidelity.md; cached by content
 * hash), runs the spec's harness once under Argus with a
 * timeout, decodes the evidence and prints the per-region table (--json:
 * the argus.trace/1 report; --timeline FILE: Chrome-trace JSON).
 * `argus trace --evidence FILE` reports on recorded evidence without a GPU.
 */
#include "cli.h"

#include "argus/collect.h"
#include "argus/demangle.h"
#include "argus/report_trace.h"
#include "argus/spec.h"
#include "argus/synth.h"
#include "argus/variant.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const ag_cli_opt cmd_trace_opts[] = {
    {"region", 'r', "R[,R...]", "probe these regions and their subtrees (default all)"},
    {"scope", 's', "K=V,...", "report occurrences in scope: launch, sm, cta, warp, iter (N or a:b), role"},
    {"timeline", 't', "FILE", "write the timeline as Chrome-trace JSON (opens in Perfetto)"},
    {"timeout", 0, "SECONDS", "kill the harness after this long (default 300)"},
    {"records", 0, "N", "trace records per warp (default 4096)"},
    {"launches", 0, "N", "launches to record (default 8)"},
    {"skip", 0, "N", "launches to run unrecorded first (default 0)"},
    {"evidence", 'e', "FILE", "report on this evidence file instead of running (no GPU needed)"},
    {0},
};

static int num_opt(ag_cli *cli, const char *name, unsigned lo, unsigned hi, unsigned *out) {
  const char *v = ag_cli_get(cli, name);
  *out = 0;
  if (!v)
    return 0;
  char *e = NULL;
  unsigned long x = strtoul(v, &e, 10);
  if (!*v || *e || x < lo || x > hi)
    return ag_cli_usage_error(cli, "--%s must be a whole number in [%u, %u]", name, lo, hi);
  *out = (unsigned)x;
  return 0;
}

/* --region names may spell a kernel demangled ("gemm::sgemm<128, 128, 8,
 * float>/loads"): rewritten in place with the mangled kernel names. */
static int resolve_regs(char **regs, int nreg, const char *const *kernels, int nk) {
  char buf[4096];
  for (int k = 0; k < nreg; k++) {
    int rc = ag_demangle_resolve(regs[k], kernels, nk, buf, sizeof buf);
    if (rc < 0)
      return rc == AG_DEMANGLE_EFULL ? AG_EFULL : AG_EINVAL;
    char *r = rc ? ag_strdup(buf) : NULL;
    if (rc && !r)
      return AG_ENOMEM;
    if (r) {
      ag_free(regs[k]);
      regs[k] = r;
    }
  }
  return 0;
}

/* Builds, compiles and runs; on success *evidence is the evidence path. */
static int collect(ag_cli *cli, const char *specpath, char **regs, int nreg, json_t *prov,
                   char **evidence) {
  ag_diags d;
  ag_diags_init(&d);
  ag_spec *spec = NULL;
  ag_str ptx = AG_STR_INIT, dir = AG_STR_INIT, path = AG_STR_INIT, why = AG_STR_INIT;
  ag_variant *v = NULL;
  ag_cubin *cb = NULL;
  ag_trace_run_result res;
  memset(&res, 0, sizeof res);
  int rc, exit_code = AG_EXIT_FAIL;
  unsigned timeout = 300, records = 0, launches = 0, skip = 0;
  if (num_opt(cli, "timeout", 1, 86400, &timeout) || num_opt(cli, "records", 16, 1u << 24, &records) ||
      num_opt(cli, "launches", 1, 65536, &launches) || num_opt(cli, "skip", 0, 1u << 30, &skip))
    return AG_EXIT_USAGE;
  if (!ag_cli_get(cli, "timeout"))
    timeout = 300;
  if ((exit_code = ag_cli_module_ptx(cli, specpath, NULL, &d, &ptx, &spec)))
    goto out;
  exit_code = AG_EXIT_FAIL;
  if (spec && spec->python) { /* docs/triton.md, "Load-time substitution" */
    ag_cli_error(cli, "'%s' is a python spec: running its Triton kernel's traced variant is "
                      "not built yet (argus regions and argus variant take it)", specpath);
    goto out;
  }
  if (!spec || !spec->run) {
    exit_code = ag_cli_usage_error(cli, "'%s' is not a program spec with a \"run\" harness",
                                   specpath);
    goto out;
  }
  ag_variant_opts o = {AG_VARIANT_TRACED, (const char *const *)regs, nreg, 0};
  ag_trace_begin("variant");
  rc = ag_variant_make(ptx.p, ptx.len, specpath, &o, &d, &v);
  ag_trace_end("variant");
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "cannot make the traced variant");
    goto out;
  }
  ag_str_printf(&dir, "%s/cache/cubin", cli->workspace);
  ag_trace_begin("compile");
  char target[16], **opts = NULL;
  rc = spec->cuda && ag_jit_target(ptx.p, ptx.len, target) == 0
           ? ag_spec_ptxas_options(spec->cuda, (const char *const *)spec->flags, target, &d,
                                   &opts)
           : 0;
  if (!rc)
    rc = ag_jit_compile_cached_ex(ag_str_cstr(&dir), v->ptx, v->len, "traced.ptx", NULL,
                                  (const char *const *)opts, &d, &cb);
  ag_spec_options_free(opts);
  ag_trace_end("compile");
  if (rc) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail(cli, rc, "cannot compile the traced variant");
    goto out;
  }
  if (d.items.n)
    ag_cli_print_diags(&d); /* warnings */
  ag_str_clear(&dir);
  ag_str_printf(&dir, "%s/trace/%.16s-%lld-%ld", cli->workspace, v->id, (long long)time(NULL),
                (long)getpid());
  if ((rc = ag_mkdir_p(ag_str_cstr(&dir), 0755))) {
    exit_code = ag_cli_fail(cli, rc, "cannot create '%s'", ag_str_cstr(&dir));
    goto out;
  }
  char *probes = json_dumps(v->probes, JSON_COMPACT);
  char *cjs = NULL;
  json_t *cj = ag_cubin_to_json(cb);
  cjs = json_dumps(cj, JSON_INDENT(1));
  const char *files[][2] = {{"variant.ptx", v->ptx}, {"probes.json", probes}, {"compile.json", cjs}};
  for (int i = 0; i < 3 && rc == 0; i++) {
    ag_str_clear(&path);
    ag_str_printf(&path, "%s/%s", ag_str_cstr(&dir), files[i][0]);
    rc = files[i][1] ? ag_file_write_atomic(ag_str_cstr(&path), files[i][1], strlen(files[i][1]))
                     : AG_ENOMEM;
  }
  free(probes);
  free(cjs);
  json_object_set_new(prov, "compile", cj);
  json_object_set_new(prov, "variant_id", json_string(v->id));
  json_object_set_new(prov, "parent", json_string(v->parent));
  json_object_set_new(prov, "run_dir", json_string(ag_str_cstr(&dir)));
  ag_str_clear(&path);
  ag_str_printf(&path, "%s/variant.cubin", ag_str_cstr(&dir));
  if (rc || (rc = ag_file_write_atomic(ag_str_cstr(&path), cb->data, cb->len))) {
    exit_code = ag_cli_fail(cli, rc, "cannot write the variant into '%s'", ag_str_cstr(&dir));
    goto out;
  }
  if ((rc = ag_collect_gpu_probe(&why))) {
    exit_code = ag_cli_fail(cli, 0, "no GPU to run the harness on: %s (the traced variant is "
                                    "in %s; 'argus trace --evidence FILE' reports on evidence "
                                    "recorded elsewhere)",
                            ag_str_cstr(&why), ag_str_cstr(&dir));
    goto out;
  }
  ag_str sites = AG_STR_INIT;
  ag_str_printf(&sites, "%s/probes.json", ag_str_cstr(&dir));
  ag_trace_run_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.argv = (const char *const *)spec->run;
  ro.cwd = spec->dir;
  ro.cubin_path = ag_str_cstr(&path);
  ro.sites_path = ag_str_cstr(&sites);
  ro.variant_id = v->id;
  ro.out_dir = ag_str_cstr(&dir);
  ro.timeout_s = timeout;
  ro.records_per_warp = records;
  ro.max_launches = launches;
  ro.skip_launches = skip;
  ag_trace_begin("run");
  rc = ag_trace_run(&ro, &res, &why);
  ag_trace_end("run");
  ag_str_release(&sites);
  if (rc) {
    exit_code = ag_cli_fail(cli, 0, "%s", ag_str_cstr(&why));
    goto out;
  }
  if (res.late_exit)
    fprintf(stderr, "argus trace: warning: %s\n", res.late_exit);
  *evidence = ag_strdup(res.evidence_path);
  exit_code = *evidence ? AG_EXIT_OK : ag_cli_fail(cli, AG_ENOMEM, "evidence");
out:
  ag_trace_run_result_release(&res);
  ag_cubin_free(cb);
  ag_variant_free(v);
  ag_spec_free(spec);
  ag_str_release(&ptx);
  ag_str_release(&dir);
  ag_str_release(&path);
  ag_str_release(&why);
  ag_diags_release(&d);
  return exit_code;
}

int cmd_trace(ag_cli *cli) {
  const char *evpath = ag_cli_get(cli, "evidence");
  if (evpath ? cli->npos != 0 : cli->npos != 1)
    return ag_cli_usage_error(cli, evpath ? "--evidence takes no program spec"
                                          : "expected one program spec (or --evidence FILE)");
  ag_scope scope;
  ag_diags sd;
  ag_diags_init(&sd);
  if (ag_scope_parse(ag_cli_get(cli, "scope"), &scope, &sd)) {
    ag_cli_print_diags(&sd);
    ag_diags_release(&sd);
    return ag_cli_usage_error(cli, "bad --scope (keys: launch, sm, cta, warp, iter, role)");
  }
  ag_diags_release(&sd);
  int nreg = 0;
  char **regs = ag_cli_split_list(ag_cli_get(cli, "region"), &nreg);
  json_t *prov = json_object();
  char *ev_owned = NULL;
  ag_evidence *ev = NULL;
  ag_trace *t = NULL;
  ag_region_stats *rs = NULL;
  int nrs = 0, rc, exit_code = AG_EXIT_OK;
  int *only = NULL, nonly = 0;
  ag_diags d;
  ag_diags_init(&d);
  if (!evpath) {
    if ((exit_code = collect(cli, cli->pos[0], regs, nreg, prov, &ev_owned)) != AG_EXIT_OK)
      goto out;
    evpath = ev_owned;
  }
  ag_trace_begin("decode");
  if ((exit_code = ag_cli_input_file(cli, evpath))) {
    ag_trace_end("decode");
    goto out;
  }
  if ((rc = ag_evidence_load(evpath, &d, &ev)) || (rc = ag_trace_decode(ev, &t))) {
    ag_trace_end("decode");
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "cannot decode the evidence '%s'", evpath);
    goto out;
  }
  ag_trace_end("decode");
  if (nreg) { /* report the selected regions and their subtrees */
    const char **kn = ag_calloc((size_t)ev->nregions + 1, sizeof *kn);
    int nk = 0;
    for (int i = 0; kn && i < ev->nregions; i++)
      if (ev->regions[i].parent < 0)
        kn[nk++] = ev->regions[i].qname;
    rc = kn ? resolve_regs(regs, nreg, kn, nk) : AG_ENOMEM;
    ag_free(kn);
    if (rc) {
      exit_code = ag_cli_fail(cli, rc, "--region");
      goto out;
    }
    only = ag_calloc((size_t)ev->nregions + 1, sizeof *only);
    char *sel = ag_calloc((size_t)ev->nregions + 1, 1);
    for (int k = 0; only && sel && k < nreg; k++) {
      int any = 0;
      for (int i = 0; i < ev->nregions; i++)
        if (!strcmp(ev->regions[i].qname, regs[k]) || !strcmp(ev->regions[i].name, regs[k]))
          sel[i] = 1, any = 1;
      if (!any) {
        ag_free(sel);
        exit_code = ag_cli_fail_input(cli, AG_ENOTFOUND, "no region '%s' in the evidence",
                                      regs[k]);
        goto out;
      }
    }
    for (int i = 0; only && sel && i < ev->nregions; i++) {
      if (!sel[i] && ev->regions[i].parent >= 0 && sel[ev->regions[i].parent])
        sel[i] = 1;
      if (sel[i])
        only[nonly++] = i;
    }
    ag_free(sel);
  }
  if ((rc = ag_trace_stats(t, &scope, only, only ? nonly : 0, &rs, &nrs))) {
    exit_code = ag_cli_fail(cli, rc, "statistics");
    goto out;
  }
  const char *tl = ag_cli_get(cli, "timeline");
  if (tl) {
    ag_str ct = AG_STR_INIT;
    rc = ag_report_chrome_trace(t, &scope, &ct);
    if (!rc)
      rc = ag_file_write_atomic(tl, ct.p ? ct.p : "", ct.len);
    ag_str_release(&ct);
    if (rc) {
      exit_code = ag_cli_fail(cli, rc, "cannot write the timeline '%s'", tl);
      goto out;
    }
  }
  if (cli->json) {
    json_t *j = ag_report_trace_json(t, &scope, rs, nrs, prov);
    if (tl)
      json_object_set_new(j, "timeline", json_string(tl));
    ag_cli_print_json(j);
    json_decref(j);
  } else {
    ag_str out = AG_STR_INIT;
    ag_report_trace_text(t, &scope, rs, nrs, &out);
    fputs(ag_str_cstr(&out), stdout);
    if (tl)
      printf("timeline: %s\n", tl);
    ag_str_release(&out);
  }
out:
  ag_region_stats_free(rs, nrs);
  ag_free(only);
  ag_trace_free(t);
  ag_evidence_free(ev);
  ag_free(ev_owned);
  json_decref(prov);
  ag_cli_free_list(regs);
  ag_diags_release(&d);
  return exit_code;
}
