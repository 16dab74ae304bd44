/*
 * cmd_variant.c — `argus variant SPEC|FILE.ptx|FILE.cu --kind trace-free|traced
 * [--region R]... [-o OUT] [--probes FILE]`: writes a measurement variant's
 * PTX so users can read what Argus runs (and, for a traced variant, its probe
 * table). Also holds ag_cli_module_ptx, the module loader `argus trace`
 * shares: a spec's PTX or CUDA source (compiled with nvcc -ptx), or a file.
 */
#include "cli.h"

#include "argus/spec.h"
#include "argus/variant.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_variant_opts[] = {
    {"kind", 'k', "KIND", "trace-free (the module unchanged), traced, probe, or mapping"},
    {"region", 'r', "R[,R...]", "traced: probe these regions and their subtrees (default all)"},
    {"output", 'o', "OUT", "write the PTX here (default stdout)"},
    {"probes", 0, "FILE", "traced: write the probe table (JSON) here; mapping: the map layout"},
    {"anchors-only", 0, NULL, "traced: only the per-warp entry/exit anchors, no marker probes"},
    {"waits", 0, NULL, "traced: also time the waits of async operations (docs/probes.md)"},
    {"op", 0, "OPID", "probe: the async site to probe (op ID from 'argus regions')"},
    {"occurrence", 0, "N", "probe: its occurrence (iteration) to probe (default 0)"},
    {0},
};

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && !strcmp(s + n - m, suf);
}

int ag_cli_module_ptx(const ag_cli *cli, const char *in, const char *const *cu_flags,
                      ag_diags *d, ag_str *ptx, ag_spec **spec_out) {
  ag_spec *spec = NULL;
  const char *ptx_path = NULL, *cu_path = NULL, *why;
  const char *const *flags = NULL;
  int rc = ag_cli_input_file(cli, in), compiled = 0;
  if (spec_out)
    *spec_out = NULL;
  if (rc)
    return rc;
  if (ends_with(in, ".json")) {
    if ((rc = ag_spec_load(in, d, &spec))) {
      ag_cli_print_diags(d);
      return ag_cli_fail_input(cli, rc, "invalid program spec '%s'", in);
    }
    /* a python spec: its module is the PTX Triton compiles when the script runs */
    if ((rc = ag_spec_python_discover(spec, d))) {
      ag_spec_free(spec);
      ag_cli_print_diags(d);
      return ag_cli_fail(cli, rc, "cannot discover the Triton kernel of '%s'", in);
    }
    ptx_path = spec->ptx;
    cu_path = spec->cuda;
    flags = (const char *const *)spec->flags;
  } else if (ends_with(in, ".cu")) {
    cu_path = in;
  } else {
    ptx_path = in;
  }
  if (cu_flags)
    flags = cu_flags;
  const char *file = ptx_path ? ptx_path : cu_path;
  if (file && (rc = ag_file_problem(file, &why))) {
    ag_diags_add(d, AG_SEV_ERROR, file, 0, 0, NULL, 0, "cannot read the %s: %s",
                 ptx_path ? "PTX" : "CUDA source", why);
  } else if (ptx_path) {
    char *text = NULL;
    size_t len = 0;
    if ((rc = ag_file_read(ptx_path, &text, &len))) {
      ag_diags_add(d, AG_SEV_ERROR, ptx_path, 0, 0, NULL, 0, "cannot read PTX: %s",
                   ag_strerror(rc));
    } else {
      ag_str_append(ptx, text, len);
      ag_free(text);
    }
  } else if (cu_path) {
    rc = ag_spec_compile_ptx(cu_path, flags, d, ptx);
    compiled = 1;
  } else {
    ag_diags_add(d, AG_SEV_ERROR, in, 0, 0, NULL, 0, "the spec names no module");
    rc = AG_EINVAL;
  }
  if (rc == 0 && ptx->oom)
    rc = AG_ENOMEM;
  if (rc == 0 && spec_out)
    *spec_out = spec;
  else
    ag_spec_free(spec);
  if (!rc)
    return AG_EXIT_OK;
  ag_cli_print_diags(d);
  /* a compilation that fails is a failure (exit 1); a bad file is bad input */
  if (compiled)
    return ag_cli_fail(cli, rc, "cannot compile '%s' to PTX", cu_path);
  return ag_cli_fail_input(cli, rc, "cannot get the PTX of '%s'", in);
}

/* Splits "a,b,c" into a NULL-terminated array of owned strings. */
char **ag_cli_split_list(const char *s, int *n) {
  *n = 0;
  if (!s)
    return NULL;
  size_t cap = 1;
  for (const char *p = s; *p; p++)
    cap += *p == ',';
  char **v = ag_calloc(cap + 1, sizeof *v);
  if (!v)
    return NULL;
  for (const char *p = s; *p;) {
    /* a comma inside <...> or (...) is a demangled kernel name's, not a separator */
    const char *e = p;
    for (int depth = 0; *e && (*e != ',' || depth > 0); e++)
      depth += (*e == '<' || *e == '(') - (depth > 0 && (*e == '>' || *e == ')'));
    e = *e ? e : NULL;
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l && !(v[(*n)++] = ag_strndup(p, l))) {
      ag_cli_free_list(v);
      *n = 0;
      return NULL;
    }
    p += l + (e ? 1 : 0);
  }
  return v;
}

void ag_cli_free_list(char **v) {
  for (char **p = v; p && *p; p++)
    ag_free(*p);
  ag_free(v);
}

int cmd_variant(ag_cli *cli) {
  if (cli->npos != 1)
    return ag_cli_usage_error(cli, "expected one program spec, .ptx or .cu file");
  ag_variant_opts o = {AG_VARIANT_TRACE_FREE, NULL, 0, 0};
  const char *kind = ag_cli_get(cli, "kind");
  if (!kind || ag_variant_kind_parse(kind, &o.kind))
    return ag_cli_usage_error(cli, "--kind must be trace-free, traced, probe or mapping");
  ag_variant_async as = {0, NULL, 0, 0};
  as.waits = ag_cli_flag(cli, "waits");
  as.probe_op = ag_cli_get(cli, "op");
  const char *occ = ag_cli_get(cli, "occurrence");
  if (as.waits && o.kind != AG_VARIANT_TRACED)
    return ag_cli_usage_error(cli, "--waits applies to --kind traced only");
  if ((as.probe_op || occ) && o.kind != AG_VARIANT_PROBE)
    return ag_cli_usage_error(cli, "--op and --occurrence apply to --kind probe only");
  if (o.kind == AG_VARIANT_PROBE && !as.probe_op)
    return ag_cli_usage_error(cli, "--kind probe needs --op OPID (see 'argus regions')");
  if (occ) {
    char *e = NULL;
    unsigned long long n = strtoull(occ, &e, 10);
    if (!*occ || *e || n > 0xfffffffeull || occ[0] == '-')
      return ag_cli_usage_error(cli, "--occurrence must be a whole number below 2^32 - 1");
    as.probe_occurrence = (uint32_t)n;
  }
  int nreg = 0;
  char **regs = ag_cli_split_list(ag_cli_get(cli, "region"), &nreg);
  if (nreg && o.kind != AG_VARIANT_TRACED) {
    ag_cli_free_list(regs);
    return ag_cli_usage_error(cli, "--region applies to --kind traced only");
  }
  o.anchors_only = ag_cli_flag(cli, "anchors-only");
  if (o.anchors_only && (o.kind != AG_VARIANT_TRACED || nreg)) {
    ag_cli_free_list(regs);
    return ag_cli_usage_error(cli, "--anchors-only applies to --kind traced without --region");
  }
  o.regions = (const char *const *)regs;
  o.nregions = nreg;
  ag_diags d;
  ag_diags_init(&d);
  ag_str ptx = AG_STR_INIT;
  ag_variant *v = NULL;
  int rc, exit_code = AG_EXIT_OK;
  const char *in = cli->pos[0];
  if ((exit_code = ag_cli_module_ptx(cli, in, NULL, &d, &ptx, NULL)))
    goto out;
  if ((rc = ag_variant_make_ex(ptx.p, ptx.len, in, &o, &as, &d, &v))) {
    ag_cli_print_diags(&d);
    exit_code = ag_cli_fail_input(cli, rc, "cannot make the %s variant of '%s'", kind, in);
    goto out;
  }
  const char *outp = ag_cli_get(cli, "output");
  if (outp) {
    if ((rc = ag_file_write_atomic(outp, v->ptx, v->len))) {
      exit_code = ag_cli_fail(cli, rc, "cannot write '%s'", outp);
      goto out;
    }
  } else {
    fwrite(v->ptx, 1, v->len, stdout);
  }
  const char *pp = ag_cli_get(cli, "probes");
  if (pp) {
    char *js = json_dumps(v->probes, JSON_INDENT(1) | JSON_SORT_KEYS);
    rc = js ? ag_file_write_atomic(pp, js, strlen(js)) : AG_ENOMEM;
    free(js);
    if (rc) {
      exit_code = ag_cli_fail(cli, rc, "cannot write '%s'", pp);
      goto out;
    }
  }
  if (outp) {
    if (cli->json) {
      json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:i,s:O}", "kind", ag_variant_kind_name(v->kind),
                            "output", outp, "id", v->id, "parent", v->parent, "probes_inserted",
                            v->nsites, "transform", v->transform);
      ag_cli_print_json(j);
      json_decref(j);
    } else {
      printf("%s variant of %s: %s (%d probes, id %.16s, parent %.16s)\n",
             ag_variant_kind_name(v->kind), in, outp, v->nsites, v->id, v->parent);
    }
  }
out:
  ag_variant_free(v);
  ag_str_release(&ptx);
  ag_diags_release(&d);
  ag_cli_free_list(regs);
  return exit_code;
}
