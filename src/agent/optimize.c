/*
 * optimize.c — the loop of `argus optimize` (docs/optimize.md): a policy
 * proposes an edit of a program version, the edit becomes a new version in
 * the workspace (a transform task whose output is the edited source, the
 * version made by it, forked from its parent), the validator's verdict is
 * bound to it (a collect task: ok with the verdict as output, or failed
 * with "rejected at STEP" and the verdict as an artifact it produced), and
 * refs name the run's state (optimize/<task>/state, an artifact) and its
 * best version (optimize/<task>/best).
 *
 * The run is a function of the workspace: the state artifact lists every
 * trial, and the search (evidence, blind) is deterministic in the state,
 * the KB and the run's seed (--seed, else the task's first; kept in the state), so --resume after a stop or a kill
 * continues exactly where an uninterrupted run would be. Tens of trials per
 * run; each costs one validation (seconds on the CPU at toy sizes).
 */
#include "argus/agent.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct run {
  ag_store *st;
  const ag_opt_task *t;
  const ag_opt_opts *o;
  const char *pol; /* the policy (o->policy or "evidence") */
  ag_kb kb;
  json_t *state;  /* {"task", "policy", "seed", "trials": [...], "best"} */
  char *err;
  size_t errlen;
} run;

static void trial_release(ag_opt_trial *t) {
  ag_free(t->edit);
  ag_free(t->rank);
}

void ag_opt_result_release(ag_opt_result *r) {
  for (int i = 0; r->trials && i < r->ntrials; i++)
    trial_release(&r->trials[i]);
  ag_free(r->trials);
  memset(r, 0, sizeof *r);
}

static void ref_name(char *buf, size_t cap, const ag_opt_task *t, const char *what) {
  snprintf(buf, cap, "optimize/%s/%s", t->name, what);
}

static uint64_t mix(uint64_t x) { /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t str_hash(uint64_t seed, const char *s) {
  uint64_t h = mix(seed + 0x9e3779b97f4a7c15ull);
  for (; *s; s++)
    h = mix(h ^ (unsigned char)*s);
  return h;
}

/* The source text of version id (owned). */
static int version_source(run *R, int64_t id, char **src, char hash[65]) {
  ag_version v;
  int rc = ag_store_version_get(R->st, id, &v);
  if (rc)
    return rc;
  size_t len;
  if (hash)
    snprintf(hash, 65, "%s", v.module);
  rc = ag_store_get(R->st, v.module, (void **)src, &len);
  ag_store_version_release(&v);
  return rc;
}

/* ------------------------------------------------------------ evidence */

/* Collects the evidence of valid version vname (source src, artifact
 * shash) as a collect task (config: task, version, timing sizes, signals;
 * input: the source): ok with the evidence (kind json) as output
 * "evidence", failed with why it is absent. The trial tr gets "evidence"
 * (the artifact) or "evidence_missing" (why). */
static int collect_evidence(run *R, json_t *tr, const char *vname, const char *src,
                            const char *shash) {
  const ag_opt_task *t = R->t;
  char ehash[65] = "", why[1024] = "", dir[4096];
  json_t *ev = NULL;
  char *text = NULL;
  json_t *cfg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "argus_optimize", "evidence",
                          "task", t->name, "version", vname, "sizes",
                          t->time_sizes ? t->time_sizes : t->sizes, "signals",
                          R->o->evidence_signals ? R->o->evidence_signals : "duration",
                          "device", R->o->device == AG_OPT_DEVICE_CPU ? "cpu" : "auto");
  const char *inputs[] = {shash};
  ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, inputs, 1, "argus optimize", 0, NULL};
  ag_store_claim cl;
  memset(&cl, 0, sizeof cl);
  int rc = cfg ? ag_store_task_begin(R->st, &ts, 0, &cl) : AG_ENOMEM;
  if (rc)
    goto out;
  if (cl.status == AG_STORE_TASK_OK && cl.noutputs) {
    snprintf(ehash, sizeof ehash, "%s", cl.outputs[0].hash);
  } else {
    ag_opt_evidence_fn fn = R->o->evidence ? R->o->evidence : ag_opt_evidence_observe;
    /* cache/: scratch no record owns, which gc and ws check leave alone */
    snprintf(dir, sizeof dir, "%s/cache/optimize", ag_store_path(R->st));
    int erc = fn(t, R->o, src, dir, &ev, why, sizeof why);
    if (erc == AG_ENOMEM) {
      rc = erc;
      goto out;
    }
    if (!erc && (!ev || !(text = ag_json_canonical(ev)))) {
      rc = AG_ENOMEM;
      goto out;
    }
    if (!erc) {
      ag_put_opts eo = {"json", cl.task_id};
      if ((rc = ag_store_put(R->st, text, strlen(text), &eo, ehash)))
        goto out;
    }
    if (erc && !why[0])
      snprintf(why, sizeof why, "%s", ag_strerror(erc));
    ag_store_output o = {"evidence", ""};
    snprintf(o.hash, sizeof o.hash, "%s", ehash);
    ag_store_result fr = {erc ? AG_STORE_TASK_FAILED : AG_STORE_TASK_OK, erc ? NULL : &o,
                          erc ? 0u : 1u, erc ? why : NULL};
    if ((rc = ag_store_task_finish(R->st, cl.task_id, &fr)))
      goto out;
  }
  if (ehash[0])
    json_object_set_new(tr, "evidence", json_string(ehash));
  else
    json_object_set_new(tr, "evidence_missing", json_string(why));
out:
  ag_free(text);
  json_decref(ev);
  ag_free(cl.outputs);
  json_decref(cfg);
  return rc;
}

/* The evidence of version id from its trial (owned; NULL when absent, with
 * why: the trial's evidence_missing). */
static json_t *version_evidence(run *R, int64_t id, const char **why) {
  size_t i;
  json_t *tr;
  *why = "no evidence was collected";
  json_array_foreach(json_object_get(R->state, "trials"), i, tr) {
    if (json_integer_value(json_object_get(tr, "id")) != id)
      continue;
    const char *h = json_string_value(json_object_get(tr, "evidence"));
    const char *m = json_string_value(json_object_get(tr, "evidence_missing"));
    if (m)
      *why = m;
    void *data;
    size_t len;
    json_t *ev = NULL;
    if (h && !ag_store_get(R->st, h, &data, &len)) {
      ag_diags d;
      ag_diags_init(&d);
      if (ag_json_load_str(data, "evidence", &d, &ev))
        *why = "its evidence artifact does not parse";
      ag_diags_release(&d);
      ag_free(data);
    }
    return ev;
  }
  return NULL;
}

/* --------------------------------------------------------- validation */

/* Validates version `id` (source src, artifact shash) and binds the
 * verdict to it; appends the trial to the state. */
static int validate_version(run *R, int n, int64_t id, int64_t parent, const char *what,
                            const char *src, const char *shash, const ag_kb_entry *kb,
                            const char *rank) {
  const ag_opt_task *t = R->t;
  char rhash[65], vname[32], vhash[65] = "";
  int rc;
  ag_put_opts po = {"source", 0};
  if ((rc = ag_store_put_file(R->st, t->reference, &po, rhash)))
    return rc;
  snprintf(vname, sizeof vname, "v%lld", (long long)id);
  json_t *seeds = json_array();
  for (int i = 0; i < t->nseeds; i++)
    json_array_append_new(seeds, json_integer((json_int_t)t->seeds[i]));
  json_t *outs = json_array();
  for (int i = 0; i < t->noutputs; i++)
    json_array_append_new(outs, json_string(t->outputs[i]));
  /* everything the verdict depends on besides the two inputs */
  json_t *cfg = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:f, s:f, s:s, s:s}", "argus_optimize",
                          "validate", "task", t->name, "version", vname, "sizes", t->sizes,
                          "seeds", seeds, "outputs", outs, "atol", t->atol, "rtol", t->rtol,
                          "device", R->o->device == AG_OPT_DEVICE_CPU ? "cpu" : "auto",
                          "invariants", kb ? kb->id : "");
  if (cfg && t->time_sizes) /* absent when there are none: earlier runs' keys stand */
    json_object_set_new(cfg, "time_sizes", json_string(t->time_sizes));
  const char *inputs[] = {shash, rhash};
  ag_store_task_spec ts = {AG_TASK_COLLECT, cfg, inputs, 2, "argus optimize", 0, NULL};
  ag_store_claim cl;
  memset(&cl, 0, sizeof cl);
  ag_opt_verdict v;
  memset(&v, 0, sizeof v);
  json_t *verdict = NULL;
  char *vtext = NULL;
  if (!cfg) {
    rc = AG_ENOMEM;
    goto out;
  }
  if ((rc = ag_store_task_begin(R->st, &ts, 0, &cl)))
    goto out;
  if (cl.status == AG_STORE_TASK_OK && cl.noutputs) { /* memoized: read its verdict */
    void *data;
    size_t len;
    snprintf(vhash, sizeof vhash, "%s", cl.outputs[0].hash);
    if ((rc = ag_store_get(R->st, vhash, &data, &len)))
      goto out;
    ag_diags d;
    ag_diags_init(&d);
    rc = ag_json_load_str(data, "verdict", &d, &verdict);
    ag_diags_release(&d);
    ag_free(data);
    if (rc)
      goto out;
  } else {
    if ((rc = ag_opt_validate(t, src, strlen(src), t->program, kb, R->o->device, &v, R->err,
                              R->errlen))) {
      ag_store_result fr = {AG_STORE_TASK_FAILED, NULL, 0, R->err};
      ag_store_task_finish(R->st, cl.task_id, &fr);
      goto out;
    }
    verdict = json_incref(v.feedback);
    json_object_set_new(verdict, "version", json_string(vname));
    if (!(vtext = ag_json_canonical(verdict))) {
      rc = AG_ENOMEM;
      goto out;
    }
    ag_put_opts vo = {"json", cl.task_id};
    if ((rc = ag_store_put(R->st, vtext, strlen(vtext), &vo, vhash)))
      goto out;
    ag_store_output out = {"verdict", ""};
    snprintf(out.hash, sizeof out.hash, "%s", vhash);
    char why[512];
    const char *msg = NULL;
    json_t *steps = json_object_get(verdict, "steps");
    json_t *last = json_array_get(steps, json_array_size(steps) - 1);
    msg = json_string_value(json_object_get(last, "message"));
    snprintf(why, sizeof why, "rejected at %s%s%s", v.step, msg ? ": " : "", msg ? msg : "");
    ag_store_result fr = {v.ok ? AG_STORE_TASK_OK : AG_STORE_TASK_FAILED, v.ok ? &out : NULL,
                          v.ok ? 1u : 0u, v.ok ? NULL : why};
    if ((rc = ag_store_task_finish(R->st, cl.task_id, &fr)))
      goto out;
  }
  /* the trial */
  {
    json_t *tr = json_pack("{s:i, s:s, s:s, s:s, s:b, s:s}", "trial", n, "version", vname,
                           "edit", what ? what : "start", "verdict", vhash, "valid",
                           json_is_true(json_object_get(verdict, "ok")), "step",
                           json_string_value(json_object_get(verdict, "failed_step"))
                               ? json_string_value(json_object_get(verdict, "failed_step"))
                               : "");
    if (!tr) {
      rc = AG_ENOMEM;
      goto out;
    }
    if (parent)
      json_object_set_new(tr, "parent", json_integer((json_int_t)parent));
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(verdict, "steps"), i, s) {
      const char *nm = json_string_value(json_object_get(s, "step"));
      if (nm && !strcmp(nm, "timing") && json_object_get(s, "median_ms"))
        json_object_set(tr, "median_ms", json_object_get(s, "median_ms"));
    }
    json_object_set_new(tr, "id", json_integer((json_int_t)id));
    json_object_set_new(tr, "source", json_string(shash));
    if (rank)
      json_object_set_new(tr, "rank", json_string(rank));
    json_array_append_new(json_object_get(R->state, "trials"), tr);
    /* the evidence the next proposals from this version rank by; blind
     * never collects it (it sees end-to-end time only) */
    if (strcmp(R->pol, "blind") && json_is_true(json_object_get(tr, "valid")) &&
        (rc = collect_evidence(R, tr, vname, src, shash)))
      goto out;
  }
out:
  ag_free(vtext);
  json_decref(verdict);
  ag_opt_verdict_release(&v);
  ag_free(cl.outputs);
  json_decref(cfg);
  return rc;
}

/* Writes the state artifact and moves the refs. */
static int save_state(run *R) {
  char name[256], hash[65];
  /* best: the valid trial with the least median time; with none timed, the
   * starting version (nothing is faster by a measurement) */
  json_t *trials = json_object_get(R->state, "trials"), *tr;
  size_t i;
  int64_t best = 0;
  double best_ms = 0;
  json_array_foreach(trials, i, tr) {
    int64_t id = (int64_t)json_integer_value(json_object_get(tr, "id"));
    if (!best)
      best = id;
    json_t *ms = json_object_get(tr, "median_ms");
    if (json_is_true(json_object_get(tr, "valid")) && ms &&
        (best_ms == 0 || json_number_value(ms) < best_ms)) {
      best = id;
      best_ms = json_number_value(ms);
    }
  }
  json_object_set_new(R->state, "best", json_integer((json_int_t)best));
  char *text = ag_json_canonical(R->state);
  if (!text)
    return AG_ENOMEM;
  ag_put_opts po = {"json", 0};
  int rc = ag_store_put(R->st, text, strlen(text), &po, hash);
  ag_free(text);
  if (rc)
    return rc;
  ag_obj o;
  memset(&o, 0, sizeof o);
  o.kind = AG_OBJ_ARTIFACT;
  snprintf(o.hash, sizeof o.hash, "%s", hash);
  ref_name(name, sizeof name, R->t, "state");
  if ((rc = ag_store_ref_set(R->st, name, &o)))
    return rc;
  ag_ref cur;
  ref_name(name, sizeof name, R->t, "best");
  if (best && (ag_store_ref_get(R->st, name, &cur) || cur.target.id != best)) {
    memset(&o, 0, sizeof o);
    o.kind = AG_OBJ_VERSION;
    o.id = best;
    rc = ag_store_ref_set(R->st, name, &o);
  }
  return rc;
}

/* ------------------------------------------------------------ policies */

typedef struct cand {
  int64_t parent;
  char *src;
  char *what;
  char *rank; /* how the entries were ranked (owned; NULL for the llm) */
  const ag_kb_entry *kb;
} cand;

/* 1 when an earlier trial made the same program (by content), or the same
 * edit from the same parent: the search never proposes it again. */
static int tried(run *R, int64_t parent, const char *what, const char *src) {
  char h[65];
  size_t i;
  json_t *tr;
  if (ag_sha256_hex(src, strlen(src), h))
    return 0;
  json_array_foreach(json_object_get(R->state, "trials"), i, tr) {
    const char *sh = json_string_value(json_object_get(tr, "source"));
    if (sh && !strcmp(sh, h))
      return 1;
    if (json_integer_value(json_object_get(tr, "parent")) == parent &&
        !strcmp(json_string_value(json_object_get(tr, "edit")), what))
      return 1;
  }
  return 0;
}

typedef struct ranked {
  const ag_kb_entry *e;
  double share;  /* the expected gain: the target's share of time x the gain factors */
  int64_t prior; /* the entry's prior (evidence; 0 for blind) */
  uint64_t tie;  /* a hash of the seed and the entry's id */
  int out;       /* 1: the evidence refutes a precondition */
} ranked;

static int cmp_ranked(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->out != y->out)
    return x->out - y->out;
  if (x->share != y->share)
    return x->share > y->share ? -1 : 1;
  if (x->prior != y->prior)
    return x->prior > y->prior ? -1 : 1;
  return x->tie < y->tie ? -1 : x->tie > y->tie;
}

/* Ranks the KB for proposals from version parent into rk (R->kb.n) and says
 * how in *how (owned). blind: the seeded hash alone; evidence: with the
 * parent's evidence, the entries whose evidence preconditions it does not
 * refute, by the share of time of the region each targets, then prior; with
 * none, by prior, saying why. */
static int rank_entries(run *R, int64_t parent, const char *psrc, ranked *rk, char **how) {
  int blind = !strcmp(R->pol, "blind");
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(R->state, "seed"));
  const char *why = NULL;
  json_t *ev = blind ? NULL : version_evidence(R, parent, &why);
  ag_str h = AG_STR_INIT;
  for (int i = 0; i < R->kb.n; i++) {
    const ag_kb_entry *e = &R->kb.e[i];
    rk[i].e = e;
    rk[i].prior = blind ? 0 : (int64_t)json_integer_value(json_object_get(e->j, "prior"));
    rk[i].tie = str_hash(seed, e->id);
    rk[i].share = ev ? ag_kb_gain(e, ev, psrc, NULL) : 0;
    rk[i].out = ev && ag_kb_evidence_holds(e, ev, NULL) == 0;
  }
  qsort(rk, (size_t)R->kb.n, sizeof *rk, cmp_ranked);
  if (blind)
    ag_str_puts(&h, "blind: seeded order");
  else if (!ev)
    ag_str_printf(&h, "prior: no evidence of v%lld (%s)", (long long)parent, why);
  else {
    ag_str_printf(&h, "evidence of v%lld:", (long long)parent);
    for (int i = 0, k = 0; i < R->kb.n; i++) {
      if (!ag_kb_applies(rk[i].e, psrc, NULL))
        continue; /* its program preconditions fail: not a candidate */
      ag_str_printf(&h, "%s %s ", k++ ? "," : "", rk[i].e->id);
      if (rk[i].out) {
        ag_str_puts(&h, "refuted: ");
        ag_kb_evidence_holds(rk[i].e, ev, &h);
      } else {
        ag_kb_gain(rk[i].e, ev, psrc, &h);
      }
    }
  }
  json_decref(ev);
  if (h.oom) {
    ag_str_release(&h);
    return AG_ENOMEM;
  }
  *how = ag_strdup(ag_str_cstr(&h));
  ag_str_release(&h);
  return *how ? 0 : AG_ENOMEM;
}

/* evidence and blind: the same search over KB entries and their values from
 * a parent version; they differ in the ranking only (docs/optimize.md). */
static int search_next(run *R, cand *c) {
  json_t *trials = json_object_get(R->state, "trials");
  int rc = 0;
  ranked *rk = ag_calloc((size_t)R->kb.n + 1, sizeof *rk);
  ag_str refused = AG_STR_INIT; /* the edits the task's sizes refuse (ag_opt_admissible) */
  if (!rk)
    return AG_ENOMEM;
  /* parents in order of preference: the best timed valid version, then
   * the valid versions from the newest back */
  size_t nt = json_array_size(trials);
  int64_t best = (int64_t)json_integer_value(json_object_get(R->state, "best"));
  int timed = 0;
  size_t i;
  json_t *tr;
  json_array_foreach(trials, i, tr) timed |= json_object_get(tr, "median_ms") != NULL;
  for (size_t pass = 0; pass <= nt && !c->src; pass++) {
    int64_t parent;
    if (pass == 0) {
      if (!timed)
        continue;
      parent = best;
    } else {
      tr = json_array_get(trials, nt - pass);
      if (!json_is_true(json_object_get(tr, "valid")))
        continue;
      parent = (int64_t)json_integer_value(json_object_get(tr, "id"));
    }
    char *psrc = NULL, *how = NULL;
    if ((rc = version_source(R, parent, &psrc, NULL)) || (rc = rank_entries(R, parent, psrc, rk, &how))) {
      ag_free(psrc);
      break;
    }
    for (int k = 0; k < R->kb.n && !c->src; k++) {
      const ag_kb_entry *e = rk[k].e;
      if (rk[k].out || !ag_kb_applies(e, psrc, NULL))
        continue;
      const json_t *vals = ag_kb_values(e);
      size_t nv = vals ? json_array_size(vals) : 1;
      for (size_t j = 0; j < nv && !c->src; j++) {
        char *out = NULL, *what = NULL;
        int r = ag_kb_apply(e, psrc, vals ? json_array_get(vals, j) : NULL, &out, &what, NULL);
        if (r == AG_ENOMEM) {
          rc = r;
          break;
        }
        char why[512];
        int seen = !r && tried(R, parent, what, out);
        int refuse = !r && !seen && ag_opt_admissible(R->t, out, "candidate", why, sizeof why);
        if (r || seen || refuse) {
          /* the sizes refuse it: said in the trial's ranking note, once */
          if (refuse && !strstr(ag_str_cstr(&refused), what))
            ag_str_printf(&refused, "%s%s", refused.len ? ", " : "", what);
          ag_free(out);
          ag_free(what);
          continue;
        }
        c->parent = parent;
        c->src = out;
        c->what = what;
        c->kb = e;
        if (refused.len) { /* how, then what the sizes refused */
          ag_str hh = AG_STR_INIT;
          ag_str_printf(&hh, "%s; not proposed, the task's sizes refuse them: %s", how,
                        ag_str_cstr(&refused));
          if (!hh.oom) {
            ag_free(how);
            how = ag_strdup(ag_str_cstr(&hh));
          }
          ag_str_release(&hh);
        }
        c->rank = how;
        how = NULL;
      }
    }
    ag_free(how);
    ag_free(psrc);
    if (rc)
      break;
  }
  ag_free(rk);
  ag_str_release(&refused);
  return rc;
}

/* llm: the external command of docs/optimize.md, "The llm protocol". */
static int llm_next(run *R, cand *c) {
  json_t *trials = json_object_get(R->state, "trials");
  size_t nt = json_array_size(trials);
  json_t *last = json_array_get(trials, nt - 1);
  int64_t parent = (int64_t)json_integer_value(json_object_get(R->state, "best"));
  for (size_t i = nt; i-- > 0;) { /* the newest valid version */
    json_t *tr = json_array_get(trials, i);
    if (json_is_true(json_object_get(tr, "valid"))) {
      parent = (int64_t)json_integer_value(json_object_get(tr, "id"));
      break;
    }
  }
  char *psrc = NULL, path[4096] = "";
  ag_str out = AG_STR_INIT, errs = AG_STR_INIT;
  json_t *req = NULL, *resp = NULL;
  char *text = NULL;
  int rc = version_source(R, parent, &psrc, NULL);
  if (rc)
    return rc;
  /* the last verdict, the applicable KB entries, the history (newest 32) */
  json_t *feedback = NULL;
  const char *vh = json_string_value(json_object_get(last, "verdict"));
  void *vd = NULL;
  size_t vl;
  if (vh && *vh && !ag_store_get(R->st, vh, &vd, &vl)) {
    ag_diags d;
    ag_diags_init(&d);
    ag_json_load_str(vd, "verdict", &d, &feedback);
    ag_diags_release(&d);
    ag_free(vd);
  }
  json_t *kb = json_array(), *hist = json_array();
  for (int k = 0; k < R->kb.n; k++)
    if (ag_kb_applies(&R->kb.e[k], psrc, NULL))
      json_array_append(kb, R->kb.e[k].j);
  char vname[32];
  snprintf(vname, sizeof vname, "v%lld", (long long)parent);
  req = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o, s:n, s:o, s:o}", "protocol",
                  "argus-optimize/1", "task", "name", R->t->name, "sizes", R->t->sizes,
                  "objective", "time", "parent", vname, "program", psrc, "feedback",
                  feedback ? feedback : json_null(), "evidence", "kb", kb, "history", hist);
  if (req) { /* the parent's region evidence, or null and why */
    const char *why = NULL;
    json_t *ev = version_evidence(R, parent, &why);
    json_object_set_new(req, "evidence", ev ? ev : json_null());
    if (!ev)
      json_object_set_new(req, "evidence_missing", json_string(why));
  }
  if (req && R->t->time_sizes)
    json_object_set_new(json_object_get(req, "task"), "time_sizes",
                        json_string(R->t->time_sizes));
  /* the history, newest first, while the request (compact JSON) stays within the token
   * budget at 4 bytes a token (a rough count for code and JSON); what is left out is said,
   * and its field is counted in from the start */
  size_t budget = 4 * (size_t)(R->o->llm_tokens > 0 ? R->o->llm_tokens : 32768), used = 0;
  if (req && (text = json_dumps(req, JSON_COMPACT)))
    used = strlen(text) + sizeof ",\"history_omitted\":4294967296";
  ag_free(text);
  text = NULL;
  size_t keep = 0;
  for (size_t i = nt; req && i-- > 0;) {
    char *one = json_dumps(json_array_get(trials, i), JSON_COMPACT);
    size_t l = one ? strlen(one) + 1 : 0; /* and its comma */
    ag_free(one);
    if (!l || used + l > budget)
      break;
    used += l;
    keep++;
  }
  for (size_t i = nt - keep; i < nt; i++)
    json_array_append(hist, json_array_get(trials, i));
  if (req && keep < nt)
    json_object_set_new(req, "history_omitted", json_integer((json_int_t)(nt - keep)));
  if (!req || !(text = json_dumps(req, JSON_COMPACT))) {
    rc = AG_ENOMEM;
    goto out;
  }
  snprintf(path, sizeof path, "%s/tmp/optimize-request-XXXXXX", ag_store_path(R->st));
  int fd = mkstemp(path);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    if (fd >= 0)
      close(fd);
    snprintf(R->err, R->errlen, "cannot write the policy request '%s'", path);
    rc = AG_EIO;
    goto out;
  }
  close(fd);
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = R->o->llm_argv;
  po.stdin_path = path;
  po.capture_out = &out;
  po.capture_err = &errs;
  po.timeout_s = R->o->llm_timeout_s > 0 ? R->o->llm_timeout_s : 600;
  ag_proc_result pr;
  rc = ag_proc_run(&po, &pr);
  if (rc) {
    snprintf(R->err, R->errlen, "cannot start the policy command '%s': %s", R->o->llm_argv[0],
             ag_strerror(rc));
    rc = AG_ECHILD;
    goto out;
  }
  if (!pr.exited || pr.exit_code) {
    ag_str how = AG_STR_INIT;
    ag_proc_describe(&pr, &how);
    const char *e = ag_str_cstr(&errs);
    size_t el = strlen(e);
    snprintf(R->err, R->errlen, "the policy command '%s' failed (%s)%s%s", R->o->llm_argv[0],
             ag_str_cstr(&how), el ? "; its stderr ends: " : "", el > 300 ? e + el - 300 : e);
    ag_str_release(&how);
    rc = AG_ECHILD;
    goto out;
  }
  ag_diags d;
  ag_diags_init(&d);
  int pr_rc = ag_json_load_str(ag_str_cstr(&out), "policy output", &d, &resp);
  ag_diags_release(&d);
  const char *prog = resp ? json_string_value(json_object_get(resp, "program")) : NULL;
  const char *edit = resp ? json_string_value(json_object_get(resp, "edit")) : NULL;
  const char *kbid = resp ? json_string_value(json_object_get(resp, "kb")) : NULL;
  if (pr_rc || !json_is_object(resp) || !((prog && edit && *edit) || kbid)) {
    snprintf(R->err, R->errlen,
             "the policy command '%s' printed something that is not a candidate: '%.120s'; it "
             "must print one JSON object, {\"edit\": TEXT, \"program\": SOURCE} or {\"kb\": "
             "ENTRY, \"value\": V} (docs/optimize.md, \"The llm protocol\")",
             R->o->llm_argv[0], ag_str_cstr(&out));
    rc = AG_EPARSE;
    goto out;
  }
  c->parent = parent;
  if (kbid) {
    const ag_kb_entry *e = NULL;
    for (int k = 0; k < R->kb.n; k++)
      if (!strcmp(R->kb.e[k].id, kbid))
        e = &R->kb.e[k];
    ag_str why = AG_STR_INIT;
    if (!e || ag_kb_apply(e, psrc, json_object_get(resp, "value"), &c->src, &c->what, &why)) {
      snprintf(R->err, R->errlen, "the policy command '%s' asked for KB entry '%s'%s%s",
               R->o->llm_argv[0], kbid, e ? ", which does not apply: " : ", which does not exist",
               e ? ag_str_cstr(&why) : "");
      ag_str_release(&why);
      rc = AG_EPARSE;
      goto out;
    }
    ag_str_release(&why);
    c->kb = e;
  } else {
    size_t el = strlen(edit);
    char *w = ag_malloc(el + 5);
    if (!w || !(c->src = ag_strdup(prog))) {
      ag_free(w);
      rc = AG_ENOMEM;
      goto out;
    }
    snprintf(w, el + 5, "llm:%s", edit);
    c->what = w;
  }
out:
  if (path[0])
    unlink(path);
  json_decref(req);
  json_decref(resp);
  ag_free(text);
  ag_free(psrc);
  ag_str_release(&out);
  ag_str_release(&errs);
  return rc;
}

/* ---------------------------------------------------------------- loop */

static int start_run(run *R) {
  const ag_opt_task *t = R->t;
  char shash[65];
  ag_put_opts po = {"source", 0};
  int rc = ag_store_put_file(R->st, t->program, &po, shash);
  if (rc)
    return rc;
  json_t *origin = json_pack("{s:s, s:s, s:s}", "optimize", t->name, "file", t->program,
                             "sizes", t->sizes);
  ag_version_spec vs = {0, shash, NULL, origin, 0};
  int64_t id;
  rc = ag_store_version_create(R->st, &vs, &id);
  json_decref(origin);
  if (rc)
    return rc;
  R->state = json_pack("{s:s, s:s, s:I, s:[]}", "task", t->name, "policy", R->o->policy, "seed",
                       (json_int_t)(R->o->seed ? R->o->seed : t->seeds[0]), "trials");
  if (!R->state)
    return AG_ENOMEM;
  char *src = NULL;
  size_t len;
  if ((rc = ag_file_read(t->program, &src, &len)))
    return rc;
  rc = validate_version(R, 0, id, 0, NULL, src, shash, NULL, NULL);
  ag_free(src);
  if (rc)
    return rc;
  json_t *tr = json_array_get(json_object_get(R->state, "trials"), 0);
  if (!json_is_true(json_object_get(tr, "valid"))) {
    snprintf(R->err, R->errlen,
             "the starting program '%s' does not pass the validator (step '%s'; its verdict is "
             "artifact %.12s, 'argus ws get %.12s'): fix it first", t->program,
             json_string_value(json_object_get(tr, "step")),
             json_string_value(json_object_get(tr, "verdict")),
             json_string_value(json_object_get(tr, "verdict")));
    rc = AG_EINVAL;
  }
  return rc;
}

static int load_run(run *R, const char *name) {
  ag_ref ref;
  int rc = ag_store_ref_get(R->st, name, &ref);
  if (rc)
    return rc;
  void *data;
  size_t len;
  if ((rc = ag_store_get(R->st, ref.target.hash, &data, &len)))
    return rc;
  ag_diags d;
  ag_diags_init(&d);
  rc = ag_json_load_str(data, name, &d, &R->state);
  ag_diags_release(&d);
  ag_free(data);
  return rc;
}

static int fill_result(run *R, ag_opt_result *r) {
  json_t *trials = json_object_get(R->state, "trials"), *tr;
  size_t i, n = json_array_size(trials);
  r->trials = ag_calloc(n ? n : 1, sizeof *r->trials);
  if (!r->trials)
    return AG_ENOMEM;
  json_array_foreach(trials, i, tr) {
    ag_opt_trial *x = &r->trials[r->ntrials++];
    x->n = (int)json_integer_value(json_object_get(tr, "trial"));
    x->version = (int64_t)json_integer_value(json_object_get(tr, "id"));
    x->parent = (int64_t)json_integer_value(json_object_get(tr, "parent"));
    x->edit = ag_strdup(json_string_value(json_object_get(tr, "edit")));
    snprintf(x->step, sizeof x->step, "%s", json_string_value(json_object_get(tr, "step")));
    x->valid = json_is_true(json_object_get(tr, "valid"));
    x->timed = json_object_get(tr, "median_ms") != NULL;
    x->median_ms = json_number_value(json_object_get(tr, "median_ms"));
    x->has_evidence = json_object_get(tr, "evidence") != NULL;
    const char *rank = json_string_value(json_object_get(tr, "rank"));
    if (!x->edit || (rank && !(x->rank = ag_strdup(rank))))
      return AG_ENOMEM;
  }
  r->best = (int64_t)json_integer_value(json_object_get(R->state, "best"));
  return 0;
}

int ag_opt_run(ag_store *st, const ag_opt_task *t, const ag_opt_opts *o, ag_opt_result *r,
               char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  err[0] = 0;
  run R;
  memset(&R, 0, sizeof R);
  R.st = st;
  R.t = t;
  R.o = o;
  R.err = err;
  R.errlen = errlen;
  const char *pol = o->policy ? o->policy : "evidence";
  R.pol = pol;
  int rc = 0, trials = o->trials > 0 ? o->trials : 5;
  uint64_t t0 = ag_now_ns();
  if (strcmp(pol, "evidence") && strcmp(pol, "blind") && strcmp(pol, "llm")) {
    snprintf(err, errlen, "unknown policy '%s' (evidence, blind, llm)", pol);
    return AG_EPARSE;
  }
  if (!strcmp(pol, "llm") && (!o->llm_argv || !o->llm_argv[0])) {
    snprintf(err, errlen, "the llm policy needs a command (--policy-cmd PROGRAM [ARG...])");
    return AG_EPARSE;
  }
  ag_diags d;
  ag_diags_init(&d);
  rc = ag_kb_load(o->kb_dir ? o->kb_dir : ag_kb_default_dir(), &d, &R.kb);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    snprintf(err, errlen, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
    ag_diags_release(&d);
    return rc;
  }
  ag_diags_release(&d);
  /* the collector observes the signals the KB reads */
  ag_str sigs = AG_STR_INIT;
  ag_opt_opts oc = *o;
  if ((rc = ag_kb_signals(&R.kb, &sigs)))
    goto out;
  oc.evidence_signals = ag_str_cstr(&sigs);
  R.o = o = &oc;
  char sname[256];
  ref_name(sname, sizeof sname, t, "state");
  ag_ref ref;
  int have = !ag_store_ref_get(st, sname, &ref);
  if (have && !o->resume) {
    snprintf(err, errlen, "the workspace holds a run of task '%s' (ref %s): continue it with "
                          "--resume, or use another workspace (-W DIR)", t->name, sname);
    rc = AG_EEXISTS;
    goto out;
  }
  if (!have && o->resume) {
    snprintf(err, errlen, "--resume: the workspace holds no run of task '%s' (no ref %s)",
             t->name, sname);
    rc = AG_ENOTFOUND;
    goto out;
  }
  if (have) {
    if ((rc = load_run(&R, sname)))
      goto out;
    const char *was = json_string_value(json_object_get(R.state, "policy"));
    if (!was || strcmp(was, pol)) {
      snprintf(err, errlen, "--resume: the run of task '%s' used policy '%s', not '%s'",
               t->name, was ? was : "?", pol);
      rc = AG_EINVAL;
      goto out;
    }
    json_int_t sd = json_integer_value(json_object_get(R.state, "seed"));
    if (o->seed && (uint64_t)sd != o->seed) {
      snprintf(err, errlen, "--resume: the run of task '%s' was started with --seed %lld, not "
                            "%llu (a resumed run keeps its seed: leave --seed out)",
               t->name, (long long)sd, (unsigned long long)o->seed);
      rc = AG_EINVAL;
      goto out;
    }
  } else {
    if ((rc = start_run(&R)))
      goto out;
    if ((rc = save_state(&R)))
      goto out;
  }
  for (;;) {
    json_t *trs = json_object_get(R.state, "trials");
    int n = (int)json_array_size(trs); /* trial n is next; trial 0 was the start */
    if (n > trials)
      break;
    if (o->budget_s > 0 && (double)(ag_now_ns() - t0) / 1e9 >= o->budget_s) {
      r->stopped = 1;
      break;
    }
    cand c;
    memset(&c, 0, sizeof c);
    rc = strcmp(pol, "llm") ? search_next(&R, &c) : llm_next(&R, &c);
    if (rc)
      goto out;
    if (!c.src) { /* the search is exhausted */
      r->stopped = 2;
      break;
    }
    char phash[65], shash[65];
    ag_version pv;
    if ((rc = ag_store_version_get(st, c.parent, &pv)))
      goto cand_out;
    snprintf(phash, sizeof phash, "%s", pv.module);
    ag_store_version_release(&pv);
    ag_put_opts po = {"source", 0};
    if ((rc = ag_store_put(st, c.src, strlen(c.src), &po, shash)))
      goto cand_out;
    {
      char pname[32];
      snprintf(pname, sizeof pname, "v%lld", (long long)c.parent);
      json_t *cfg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "argus_optimize", "edit", "task",
                              t->name, "parent", pname, "edit", c.what, "policy", pol, "trial", n);
      const char *in[] = {phash};
      ag_store_task_spec ts = {AG_TASK_TRANSFORM, cfg, in, 1, "argus optimize", 0, NULL};
      ag_store_claim cl;
      memset(&cl, 0, sizeof cl);
      rc = cfg ? ag_store_task_begin(st, &ts, 0, &cl) : AG_ENOMEM;
      if (!rc && cl.status == AG_STORE_TASK_RUNNING) {
        ag_store_output out = {"source", ""};
        snprintf(out.hash, sizeof out.hash, "%s", shash);
        ag_store_result fr = {AG_STORE_TASK_OK, &out, 1, NULL};
        rc = ag_store_task_finish(st, cl.task_id, &fr);
      }
      json_t *origin = json_pack("{s:s, s:i, s:s}", "optimize", t->name, "trial", n, "policy",
                                 pol);
      ag_version_spec vs = {c.parent, shash, c.what, origin, cl.task_id};
      int64_t id = 0;
      if (!rc)
        rc = origin ? ag_store_version_create(st, &vs, &id) : AG_ENOMEM;
      json_decref(origin);
      json_decref(cfg);
      ag_free(cl.outputs);
      if (!rc)
        rc = validate_version(&R, n, id, c.parent, c.what, c.src, shash, c.kb, c.rank);
      if (!rc)
        rc = save_state(&R);
    }
  cand_out:
    ag_free(c.src);
    ag_free(c.what);
    ag_free(c.rank);
    if (rc)
      goto out;
  }
out:
  if (R.state) {
    int frc = fill_result(&R, r);
    rc = rc ? rc : frc;
    ag_ref sr;
    if (!ag_store_ref_get(st, sname, &sr))
      snprintf(r->state, sizeof r->state, "%s", sr.target.hash);
  }
  if (rc && !err[0])
    snprintf(err, errlen, "argus optimize: %s", ag_strerror(rc));
  json_decref(R.state);
  ag_kb_release(&R.kb);
  ag_str_release(&sigs);
  return rc;
}
