/*
 * validate.c — the validator of `argus optimize` (docs/optimize.md,
 * "The validator"). A candidate is tile source text; the steps run in
 * order and the first failure ends the verdict, each step a JSON object of
 * the feedback the policy reads:
 *
 *   parse, check (`argus check` at the task's sizes: the counterexample),
 *   invariants (of the KB entry that made it), lower, bind (the sizes and
 *   the launch preconditions), compile (NVRTC, where built), correctness
 *   (every seed: fresh seeded buffers for the reference and the candidate,
 *   outputs compared within the tolerance, inputs byte for byte with their
 *   pristine copy), timing (GPU only; on the CPU "not run").
 *
 * Reward hacks this defeats by construction: an output left unwritten
 * (the candidate's output buffers start as seeded noise, never as an
 * earlier run's result), a kernel that writes its inputs (compared after
 * the run), a result tuned to one input (several seeds). Called once per
 * trial; the interpreter bounds it to toy sizes (docs/run.md).
 */
#include "argus/agent.h"
#include "argus/tile_check.h"
#include "argus/tile_run.h"

#include <stdlib.h>
#include <string.h>

static json_t *step_new(json_t *steps, const char *name, const char *status) {
  json_t *s = json_pack("{s:s, s:s}", "step", name, "status", status);
  if (s)
    json_array_append_new(steps, s);
  return s;
}

static void fail(ag_opt_verdict *v, json_t *step, const char *name) {
  v->ok = 0;
  snprintf(v->step, sizeof v->step, "%s", name);
  json_object_set_new(step, "status", json_string("failed"));
}

static void add_diags(json_t *step, const ag_diags *d) {
  ag_str s = AG_STR_INIT;
  ag_diags_format(d, &s);
  json_object_set_new(step, "diagnostics", ag_diags_to_json(d));
  json_object_set_new(step, "text", json_string(ag_str_cstr(&s)));
  if (d->items.n)
    json_object_set_new(step, "message", json_string(d->items.v[0].msg));
  ag_str_release(&s);
}

static int count_asserts(const char *src) {
  int n = 0;
  for (const char *l = src; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    while (*l == ' ')
      l++;
    n += !strncmp(l, "assert ", 7);
  }
  return n;
}

static int is_output(const ag_opt_task *t, const char *name) {
  for (int i = 0; i < t->noutputs; i++)
    if (!strcmp(t->outputs[i], name))
      return 1;
  return 0;
}

/* A program lowered and bound at the task's sizes. */
typedef struct prog {
  ag_tile_program *p;
  ag_tile_run_sizes sz;
  ag_tile_lowered *low;
  ag_tile_bound b;
  int bound;
} prog;

static void prog_release(prog *g) {
  if (g->bound)
    ag_tile_bound_release(&g->b);
  ag_tile_lowered_free(g->low);
  ag_tile_run_sizes_release(&g->sz);
  ag_tile_program_free(g->p);
  memset(g, 0, sizeof *g);
}

/* Lowers p at sizes and binds its first kernel into g (g->p stays NULL: p is
 * the caller's); non-zero with the diagnostics in d when a size is missing,
 * the lowering fails or an `assume` does not hold. */
static int lower_bind(const ag_tile_program *p, const char *sizes, ag_diags *d, prog *g) {
  if (ag_tile_run_sizes_parse(p, NULL, sizes, d, &g->sz) ||
      ag_tile_lower(p,
                    &(ag_tile_lower_opts){NULL, (const char *const *)g->sz.defines,
                                          g->sz.ndefines, 1},
                    d, &g->low) ||
      ag_tile_run_bind(p, &g->low->kernels[0], &g->sz, d, &g->b))
    return 1;
  g->bound = 1;
  return 0;
}

int ag_opt_admissible(const ag_opt_task *t, const char *src, const char *name, char *why,
                      size_t whylen) {
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_program *p = NULL;
  int rc = 0;
  why[0] = 0;
  if (ag_tile_parse(src, strlen(src), name, &d, &p))
    rc = 1;
  for (int k = 0; k < 2 && !rc; k++) {
    const char *sz = k ? t->time_sizes : t->sizes;
    prog g;
    memset(&g, 0, sizeof g);
    if (sz && lower_bind(p, sz, &d, &g))
      rc = 1;
    prog_release(&g);
  }
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    snprintf(why, whylen, "%s", s.oom ? "out of memory" : ag_str_cstr(&s));
    ag_str_release(&s);
  }
  ag_tile_program_free(p);
  ag_diags_release(&d);
  return rc;
}

static void free_bufs(void **b, int n) {
  for (int i = 0; b && i < n; i++)
    ag_free(b[i]);
  ag_free(b);
}

/* One seed: the reference and the candidate on fresh copies of the same
 * seeded tensors. Fills step on failure and returns 1; 0 when it passed;
 * negative for the validator's own failure. */
static int run_seed(const ag_opt_task *t, prog *ref, prog *cand, uint64_t seed,
                    ag_opt_device dev, const char *ptx, json_t *step, char *err, size_t errlen) {
  const ag_tile_lkernel *k = cand->b.k;
  int n = k->nparams, rc = 0;
  void **pristine = ag_calloc((size_t)n, sizeof(void *));
  void **rbuf = ag_calloc((size_t)n, sizeof(void *));
  void **cbuf = ag_calloc((size_t)n, sizeof(void *));
  void **cout = ag_calloc((size_t)n, sizeof(void *));
  char ierr[512] = "";
  ag_tile_exec_result xr;
  memset(&xr, 0, sizeof xr);
  if (!pristine || !rbuf || !cbuf || !cout) {
    rc = AG_ENOMEM;
    goto out;
  }
  uint64_t state = seed;
  for (int i = 0; i < n; i++) {
    if (k->params[i].kind != AG_TILE_PARAM_TENSOR)
      continue;
    uint64_t bytes = cand->b.bytes[i];
    if (!(pristine[i] = ag_malloc(bytes ? bytes : 1)) || !(rbuf[i] = ag_malloc(bytes ? bytes : 1)) ||
        !(cbuf[i] = ag_malloc(bytes ? bytes : 1))) {
      rc = AG_ENOMEM;
      goto out;
    }
    /* outputs too: an output the candidate leaves unwritten keeps this noise */
    ag_tile_run_fill(k->params[i].dtype, pristine[i], bytes, &state, 0.5);
    memcpy(rbuf[i], pristine[i], bytes);
    memcpy(cbuf[i], pristine[i], bytes);
  }
  const ag_tile_lkernel *rk = ref->b.k;
  if ((rc = ag_tile_interp(ref->p, &ref->b, (const char *const *)ref->sz.defines,
                           ref->sz.ndefines, rbuf, ierr, sizeof ierr))) {
    snprintf(err, errlen, "the reference '%s' did not run in the value interpreter: %s",
             t->reference, ierr);
    rc = AG_EIO;
    goto out;
  }
  (void)rk;
  const char *runner = "interp";
#if ARGUS_HAVE_TILE_EXEC
  if (dev == AG_OPT_DEVICE_AUTO && ptx) {
    ag_tile_exec_opts xo;
    memset(&xo, 0, sizeof xo);
    xo.seed = seed;
    xo.keep_tensors = 1;
    xo.timeout_s = 60;
    int xrc = ag_tile_run_exec(&cand->b, ptx, &xo, &xr);
    if (xrc == 0 && xr.tensors) {
      runner = "gpu";
      for (int i = 0; i < n; i++)
        if (xr.tensors[i] && cbuf[i])
          memcpy(cbuf[i], xr.tensors[i], cand->b.bytes[i]);
    } else if (xrc != AG_ENODEV) {
      json_object_set_new(step, "seed", json_integer((json_int_t)seed));
      json_object_set_new(step, "message", json_string(xr.err[0] ? xr.err : ag_strerror(xrc)));
      rc = 1;
      goto out;
    }
  }
#else
  (void)dev;
  (void)ptx;
#endif
  if (!strcmp(runner, "interp") &&
      ag_tile_interp(cand->p, &cand->b, (const char *const *)cand->sz.defines, cand->sz.ndefines,
                     cbuf, ierr, sizeof ierr)) {
    json_object_set_new(step, "seed", json_integer((json_int_t)seed));
    json_object_set_new(step, "message", json_string(ierr));
    rc = 1;
    goto out;
  }
  json_object_set_new(step, "runner", json_string(runner));
  /* inputs: byte for byte as they were */
  for (int i = 0; i < n; i++) {
    if (!cbuf[i] || is_output(t, k->params[i].name))
      continue;
    if (memcmp(cbuf[i], pristine[i], cand->b.bytes[i])) {
      uint64_t at = 0;
      while (((unsigned char *)cbuf[i])[at] == ((unsigned char *)pristine[i])[at])
        at++;
      char msg[256];
      snprintf(msg, sizeof msg,
               "input '%s' was modified by the candidate (first changed byte %llu of %llu): "
               "a kernel must not write its inputs", k->params[i].name,
               (unsigned long long)at, (unsigned long long)cand->b.bytes[i]);
      json_object_set_new(step, "seed", json_integer((json_int_t)seed));
      json_object_set_new(step, "message", json_string(msg));
      json_object_set_new(step, "tensor", json_string(k->params[i].name));
      rc = 1;
      goto out;
    }
  }
  /* outputs: within the tolerance of the reference's */
  for (int i = 0; i < n; i++)
    cout[i] = cbuf[i] && is_output(t, k->params[i].name) ? cbuf[i] : NULL;
  ag_tile_exec_result cr;
  memset(&cr, 0, sizeof cr);
  cr.tol_atol = t->atol;
  cr.tol_rtol = t->rtol;
  ag_tile_run_compare(&cand->b, cout, rbuf, &cr);
  if (cr.nbad) {
    ag_str s = AG_STR_INIT;
    ag_str_printf(&s, "%s[", k->params[cr.compared_param].name);
    for (int d = 0; d < cr.bad_rank; d++)
      ag_str_printf(&s, "%s%llu", d ? ", " : "", (unsigned long long)cr.first_bad[d]);
    ag_str_printf(&s, "]: got %g, expected %g (|got - want| > %g + %g |want|); %llu of %llu "
                      "elements wrong",
                  cr.got, cr.want, cr.atol, cr.rtol, (unsigned long long)cr.nbad,
                  (unsigned long long)cr.nelems);
    json_object_set_new(step, "seed", json_integer((json_int_t)seed));
    json_object_set_new(step, "message", json_string(ag_str_cstr(&s)));
    json_object_set_new(step, "wrong", json_integer((json_int_t)cr.nbad));
    ag_str_release(&s);
    rc = 1;
  }
out:
  ag_tile_exec_result_release(&xr);
  free_bufs(pristine, n);
  free_bufs(rbuf, n);
  free_bufs(cbuf, n);
  ag_free(cout);
  return rc;
}

/* Parses, lowers and binds path/src at the task's sizes for the reference. */
static int load_ref(const ag_opt_task *t, prog *g, ag_diags *d) {
  char *src = NULL;
  size_t len;
  int rc = ag_file_read(t->reference, &src, &len);
  if (!rc)
    rc = ag_tile_parse(src, len, t->reference, d, &g->p);
  ag_free(src);
  if (!rc)
    rc = ag_tile_run_sizes_parse(g->p, NULL, t->sizes, d, &g->sz);
  ag_tile_lower_opts lo = {NULL, (const char *const *)g->sz.defines, g->sz.ndefines, 1};
  if (!rc)
    rc = ag_tile_lower(g->p, &lo, d, &g->low);
  if (!rc && !(rc = ag_tile_run_bind(g->p, &g->low->kernels[0], &g->sz, d, &g->b)))
    g->bound = 1;
  return rc;
}

int ag_opt_validate(const ag_opt_task *t, const char *src, size_t len, const char *name,
                    const ag_kb_entry *kb, ag_opt_device dev, ag_opt_verdict *v, char *err,
                    size_t errlen) {
  memset(v, 0, sizeof *v);
  err[0] = 0;
  prog cand, ref, timed; /* timed: cand at the task's time_sizes */
  memset(&cand, 0, sizeof cand);
  memset(&timed, 0, sizeof timed);
  memset(&ref, 0, sizeof ref);
  ag_diags d;
  ag_diags_init(&d);
  ag_tile_report *rep = NULL;
  ag_str ptx = AG_STR_INIT, tptx = AG_STR_INIT;
  char *start = NULL;
  size_t slen;
  int rc = 0, have_ptx = 0;
  json_t *steps = json_array(), *st;
  v->feedback = json_pack("{s:b, s:o}", "ok", 0, "steps", steps);
  if (!v->feedback)
    return AG_ENOMEM;
  v->ok = 1;

  /* parse */
  st = step_new(steps, "parse", "passed");
  if (ag_tile_parse(src, len, name, &d, &cand.p)) {
    fail(v, st, "parse");
    add_diags(st, &d);
    goto done;
  }
  if (ag_tile_run_sizes_parse(cand.p, NULL, t->sizes, &d, &cand.sz)) {
    fail(v, st, "parse");
    add_diags(st, &d);
    goto done;
  }
  /* check */
  st = step_new(steps, "check", "passed");
  ag_tile_check_opts co;
  memset(&co, 0, sizeof co);
  co.defines = (const char *const *)cand.sz.defines;
  co.ndefines = cand.sz.ndefines;
  int crc = ag_tile_check(cand.p, &co, &d, &rep);
  if (crc == AG_ENOMEM) {
    rc = crc;
    goto done;
  }
  if (crc) {
    fail(v, st, "check");
    add_diags(st, &d);
    goto done;
  }
  if (!ag_tile_report_ok(rep)) {
    ag_str s = AG_STR_INIT;
    ag_tile_report_text(rep, &s);
    fail(v, st, "check");
    json_t *rj = ag_tile_report_json(rep), *viol = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(rj, "assertions"), i, a) {
      const char *sts = json_string_value(json_object_get(a, "status"));
      if (sts && strcmp(sts, "proved"))
        json_array_append(viol, a);
    }
    json_object_set_new(st, "violated", viol);
    json_object_set_new(st, "text", json_string(ag_str_cstr(&s)));
    json_decref(rj);
    ag_str_release(&s);
    goto done;
  }
  json_object_set_new(st, "assertions", json_integer(rep->nasserts));
  /* invariants of the edit */
  if (kb) {
    st = step_new(steps, "invariants", "passed");
    if ((rc = ag_file_read(t->program, &start, &slen)))
      goto done;
    int before = count_asserts(start), after = count_asserts(src);
    json_object_set(st, "templates", json_object_get(kb->j, "invariants"));
    /* bounds and races: the check step proved every obligation; say how many */
    json_object_set_new(st, "assertions", json_integer(after));
    json_object_set_new(st, "bounds_proved", json_integer((json_int_t)rep->bounds_proved));
    json_object_set_new(st, "races_proved", json_integer((json_int_t)rep->races_proved));
    if (after < before) {
      char msg[256];
      snprintf(msg, sizeof msg, "the edit '%s' removed tag assertions: %d in the program, %d "
                                "in the task's starting program", kb->id, after, before);
      fail(v, st, "invariants");
      json_object_set_new(st, "message", json_string(msg));
      goto done;
    }
  }
  /* lower and bind */
  st = step_new(steps, "lower", "passed");
  ag_tile_lower_opts lo = {NULL, (const char *const *)cand.sz.defines, cand.sz.ndefines, 1};
  if (ag_tile_lower(cand.p, &lo, &d, &cand.low)) {
    fail(v, st, "lower");
    add_diags(st, &d);
    goto done;
  }
  st = step_new(steps, "bind", "passed");
  if (ag_tile_run_bind(cand.p, &cand.low->kernels[0], &cand.sz, &d, &cand.b)) {
    fail(v, st, "bind");
    add_diags(st, &d);
    goto done;
  }
  cand.bound = 1;
  /* the timing sizes: the same program lowered and bound at them (a const
   * such as K changes the lowering); an assume they violate is a bind
   * failure, found on the CPU too */
  if (t->time_sizes) {
    json_object_set_new(st, "time_sizes", json_string(t->time_sizes));
    if (lower_bind(cand.p, t->time_sizes, &d, &timed)) {
      fail(v, st, "bind");
      json_object_set_new(st, "sizes", json_string("time_sizes"));
      add_diags(st, &d);
      goto done;
    }
  }
  /* compile */
  st = step_new(steps, "compile", "passed");
  int nrc = ag_tile_nvrtc_ptx(cand.low->cuda, cand.low->len, "sm_90a", &d, &ptx, NULL);
  if (!nrc && t->time_sizes)
    nrc = ag_tile_nvrtc_ptx(timed.low->cuda, timed.low->len, "sm_90a", &d, &tptx, NULL);
  if (nrc == AG_EUNSUPPORTED) {
    json_object_set_new(st, "status", json_string("not run"));
    json_object_set_new(st, "why", json_string("argus was built without NVRTC"));
  } else if (nrc == AG_ENOMEM) {
    rc = nrc;
    goto done;
  } else if (nrc) {
    fail(v, st, "compile");
    add_diags(st, &d);
    goto done;
  } else {
    have_ptx = 1;
  }
  /* correctness */
  st = step_new(steps, "correctness", "passed");
  if ((rc = load_ref(t, &ref, &d))) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    snprintf(err, errlen, "the reference '%s' does not load at the task's sizes: %s",
             t->reference, ag_str_cstr(&s));
    ag_str_release(&s);
    rc = AG_EIO;
    goto done;
  }
  {
    const ag_tile_lkernel *ck = cand.b.k, *rk = ref.b.k;
    int same = ck->nparams == rk->nparams;
    for (int i = 0; same && i < ck->nparams; i++)
      same = !strcmp(ck->params[i].name, rk->params[i].name) &&
             ck->params[i].kind == rk->params[i].kind &&
             cand.b.bytes[i] == ref.b.bytes[i] &&
             (ck->params[i].kind != AG_TILE_PARAM_TENSOR ||
              !strcmp(ck->params[i].dtype, rk->params[i].dtype));
    if (!same) {
      fail(v, st, "correctness");
      json_object_set_new(st, "message",
                          json_string("the candidate's parameters (names, order, dtypes, "
                                      "sizes) differ from the reference's"));
      goto done;
    }
    for (int o = 0; o < t->noutputs; o++) {
      int found = 0;
      for (int i = 0; i < ck->nparams; i++)
        found |= ck->params[i].kind == AG_TILE_PARAM_TENSOR &&
                 !strcmp(ck->params[i].name, t->outputs[o]);
      if (!found) {
        snprintf(err, errlen, "task output '%s' is not a tensor of kernel '%s' (%s)",
                 t->outputs[o], ck->name, t->file);
        rc = AG_EINVAL;
        goto done;
      }
    }
  }
  json_t *seeds = json_array();
  json_object_set_new(st, "seeds", seeds);
  for (int s = 0; s < t->nseeds; s++) {
    json_array_append_new(seeds, json_integer((json_int_t)t->seeds[s]));
    int r = run_seed(t, &ref, &cand, t->seeds[s], dev, have_ptx ? ptx.p : NULL, st, err, errlen);
    if (r < 0) {
      rc = r;
      goto done;
    }
    if (r) {
      fail(v, st, "correctness");
      goto done;
    }
  }
  /* timing */
  st = step_new(steps, "timing", "not run");
#if ARGUS_HAVE_TILE_EXEC
  if (dev == AG_OPT_DEVICE_AUTO && have_ptx) {
    ag_tile_exec_opts xo;
    ag_tile_exec_result xr;
    memset(&xo, 0, sizeof xo);
    memset(&xr, 0, sizeof xr);
    xo.seed = t->seeds[0];
    xo.bench = 1;
    xo.samples = t->samples;
    int xrc = t->time_sizes ? ag_tile_run_exec(&timed.b, tptx.p, &xo, &xr)
                            : ag_tile_run_exec(&cand.b, ptx.p, &xo, &xr);
    json_object_set_new(st, "sizes", json_string(t->time_sizes ? t->time_sizes : t->sizes));
    if (xrc == 0) {
      v->timed = 1;
      v->median_ms = xr.kernel.median_ms;
      json_object_set_new(st, "status", json_string("passed"));
      json_object_set_new(st, "median_ms", json_real(xr.kernel.median_ms));
      json_object_set_new(st, "p10_ms", json_real(xr.kernel.p10_ms));
      json_object_set_new(st, "p90_ms", json_real(xr.kernel.p90_ms));
      json_object_set_new(st, "samples", json_integer(xr.kernel.samples));
      json_object_set_new(st, "device", json_string(xr.device));
    } else if (xrc == AG_ENODEV) {
      json_object_set_new(st, "why", json_string("no GPU device: nothing is timed on the CPU"));
    } else {
      fail(v, st, "timing");
      json_object_set_new(st, "message", json_string(xr.err[0] ? xr.err : ag_strerror(xrc)));
    }
    ag_tile_exec_result_release(&xr);
  } else {
    json_object_set_new(st, "why", json_string(have_ptx ? "the CPU was asked for (--cpu)"
                                                        : "no PTX (built without NVRTC)"));
  }
#else
  json_object_set_new(st, "why", json_string("built without the CUDA toolkit: nothing is timed"));
#endif
done:
  json_object_set_new(v->feedback, "ok", json_boolean(v->ok && !rc));
  if (!v->ok)
    json_object_set_new(v->feedback, "failed_step", json_string(v->step));
  ag_free(start);
  ag_str_release(&ptx);
  ag_str_release(&tptx);
  ag_tile_report_free(rep);
  prog_release(&timed);
  prog_release(&cand);
  prog_release(&ref);
  ag_diags_release(&d);
  if (rc) {
    if (!err[0])
      snprintf(err, errlen, "validating '%s': %s", name, ag_strerror(rc));
    ag_opt_verdict_release(v);
  }
  return rc;
}

void ag_opt_verdict_release(ag_opt_verdict *v) {
  json_decref(v->feedback);
  v->feedback = NULL;
}
