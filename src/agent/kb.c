/*
 * kb.c — the knowledge base of `argus optimize` (src/agent/kb/NAME.json,
 * docs/optimize.md "Knowledge base"): entries are data; this file loads and
 * validates them (diagnostics at the key), tests their program
 * preconditions and applies their edits to tile source text.
 *
 * Three edit kinds, all plain text edits of the .tile source, so that the
 * result is a program a person can read and `argus check` re-proves:
 *   set_const  NAME = V on a module-level constant line (tile shapes,
 *              pipeline stages: programs written in those knobs);
 *   rewrite    on each line that contains `line_contains` and `from` (and
 *              not `unless`), the first `from` becomes `to` (a swizzle
 *              added to a make_shared);
 *   splice     the program's structure: steps, in order, each anchored at
 *              the one line that contains its `at` text, which replace the
 *              line, insert lines before or after it (at its indentation),
 *              or indent it and the rest of its block into a new loop
 *              (persistent scheduling, a loop bound limited by the causal
 *              mask); a replace with `through` replaces the anchor's line
 *              through the first line after it that holds that text (a
 *              pipeline's stage fills become TMA loads). An anchor found zero or several times refuses the
 *              edit: a splice never guesses where it goes.
 * A few dozen entries, loaded once per run.
 */
#include "argus/agent.h"
#include "agent_int.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#ifndef ARGUS_KB_SOURCE_DIR
#define ARGUS_KB_SOURCE_DIR "src/agent/kb"
#endif

const char *ag_kb_default_dir(void) {
  const char *e = getenv("ARGUS_KB_DIR");
  return e && *e ? e : ARGUS_KB_SOURCE_DIR;
}

/* ------------------------------------------------------------ constants */

/* The line of module-level constant `name` ("NAME = 64" at column 0): its
 * start and the value's start and end. */
static const char *const_line(const char *src, const char *name, const char **vs,
                              const char **ve) {
  size_t n = strlen(name);
  for (const char *l = src; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (strncmp(l, name, n) || (l[n] != ' ' && l[n] != '='))
      continue;
    const char *p = l + n;
    while (*p == ' ')
      p++;
    if (*p != '=' || p[1] == '=')
      continue;
    p++;
    while (*p == ' ')
      p++;
    const char *q = p;
    while (isdigit((unsigned char)*q))
      q++;
    if (q == p)
      continue; /* an expression, not a plain integer */
    const char *r = q;
    while (*r == ' ')
      r++;
    if (*r && *r != '\n' && *r != '#')
      continue;
    *vs = p;
    *ve = q;
    return l;
  }
  return NULL;
}

int ag_tile_src_const(const char *src, const char *name, int64_t *val) {
  const char *vs, *ve;
  *val = 0;
  if (!const_line(src, name, &vs, &ve) || ve - vs > 18)
    return AG_ENOTFOUND;
  *val = strtoll(vs, NULL, 10);
  return 0;
}

/* ----------------------------------------------------------- validation */


static const char *const cmp_ops[] = {"lt", "le", "gt", "ge", "eq", "ne", NULL};

/* Says in what why an evidence precondition (gain 0) or a gain factor
 * (gain 1) c is not: 0 when it is good. A precondition is {"region": R,
 * "signal": "duration", "share_gt" or "share_lt": 0..1} or {["region": R,]
 * "signal": S, "metric": M, "gt" or "lt": X}; a factor {["region": R,]
 * "signal": S, "metric": M[, "complement": true][, "unobserved": X]} (M in 0..1),
 * {"intensity": [A, B]} or {"scale": 0..1}. */
static int evidence_term(const json_t *c, int gain, char *why, size_t cap) {
  const char *sig = json_string_value(json_object_get(c, "signal"));
  const char *met = json_string_value(json_object_get(c, "metric"));
  json_t *reg = json_object_get(c, "region");
  size_t n = json_object_size(c);
  if (!json_is_object(c)) {
    snprintf(why, cap, "must be an object");
    return 1;
  }
  if (gain && json_object_get(c, "intensity")) {
    json_t *a = json_object_get(c, "intensity");
    if (n == 1 && json_array_size(a) == 2 && json_is_string(json_array_get(a, 0)) &&
        json_is_string(json_array_get(a, 1)))
      return 0;
    snprintf(why, cap, "{\"intensity\": [GROWN, OTHER]}: two module-level constants, the one "
                       "the entry grows first");
    return 1;
  }
  if (gain && json_object_get(c, "scale")) {
    double x = json_number_value(json_object_get(c, "scale"));
    if (n == 1 && json_is_number(json_object_get(c, "scale")) && x > 0 && x <= 1)
      return 0;
    snprintf(why, cap, "{\"scale\": X}: X in (0, 1]");
    return 1;
  }
  char known[256];
  if (!sig) {
    ag_opt_metric_list(0, known, sizeof known);
    snprintf(why, cap, "'signal' must be a string (%.160s)", known);
    return 1;
  }
  if (!ag_opt_metric_known(sig, NULL, NULL, NULL)) {
    ag_opt_metric_list(0, known, sizeof known);
    snprintf(why, cap, "signal '%s' is not one the evidence collector observes (%.160s)", sig, known);
    return 1;
  }
  int isreg = 0, unit = 0;
  if (!ag_opt_metric_known(sig, met ? met : "share", &isreg, &unit)) {
    ag_opt_metric_list(1, known, sizeof known);
    snprintf(why, cap, "'%s' is not a metric of signal '%s' (docs/optimize.md: %.160s)",
             met ? met : "(none)", sig, known);
    return 1;
  }
  if (isreg != (reg != NULL) || (reg && !json_is_string(reg))) {
    snprintf(why, cap, "%s's %s %s", sig, met ? met : "share",
             isreg ? "is of a region: 'region' must name it" : "is the kernel's: no 'region'");
    return 1;
  }
  size_t want = 1 + (reg != NULL) + (met != NULL);
  if (gain) {
    json_t *cp = json_object_get(c, "complement"), *un = json_object_get(c, "unobserved");
    double u = json_number_value(un);
    if (!met || !unit || (cp && !json_is_boolean(cp)) ||
        (un && (!json_is_number(un) || u < 0 || u > 1)) ||
        n != want + (cp != NULL) + (un != NULL)) {
      snprintf(why, cap, "a factor is {[\"region\": R,] \"signal\": S, \"metric\": M[, "
                         "\"complement\": true][, \"unobserved\": X]} of a metric in 0..1 "
                         "(X in 0..1: the factor where the signal was not observed)");
      return 1;
    }
    return 0;
  }
  json_t *gt = json_object_get(c, met ? "gt" : "share_gt"), *lt = json_object_get(c, met ? "lt" : "share_lt");
  json_t *x = gt ? gt : lt;
  if ((gt && lt) || !json_is_number(x) || n != want + 1 ||
      (unit && (json_number_value(x) < 0 || json_number_value(x) > 1))) {
    snprintf(why, cap, met ? "must be {[\"region\": R,] \"signal\": S, \"metric\": M, \"gt\" "
                             "or \"lt\": X}%s"
                           : "must be {\"region\": R, \"signal\": \"duration\", "
                             "\"share_gt\" or \"share_lt\": 0..1}%s",
             unit && met ? " (X in 0..1)" : "");
    return 1;
  }
  return 0;
}

/* The actions of a splice step: the lines that replace the anchor or go
 * before or after it, or the indent of its block. */
static const char *const splice_actions[] = {"replace", "before", "after", "indent", NULL};

/* Says in why what is wrong with splice edit e (0: nothing). The lines of a
 * step are strings without a newline; {V} in them is the parameter value,
 * present exactly when the edit has values (and a name to show them by). */
static int splice_check(const json_t *e, char *why, size_t cap) {
  json_t *steps = json_object_get(e, "steps"), *vals = json_object_get(e, "values");
  json_t *name = json_object_get(e, "name");
  if (!json_is_array(steps) || !json_array_size(steps)) {
    snprintf(why, cap, "'steps' must be a non-empty array");
    return 1;
  }
  if ((vals != NULL) != (name != NULL) || (name && !json_is_string(name)) ||
      (vals && (!json_is_array(vals) || !json_array_size(vals))) ||
      json_object_size(e) != 2u + 2u * (vals != NULL)) {
    snprintf(why, cap, "'name' (a string) and 'values' (a non-empty array) go together, and "
                       "nothing else beside 'kind' and 'steps'");
    return 1;
  }
  size_t i, k;
  json_t *x, *st;
  json_array_foreach(vals, i, x) {
    if (!json_is_integer(x) || json_integer_value(x) <= 0) {
      snprintf(why, cap, "value %zu is not a positive integer", i + 1);
      return 1;
    }
  }
  int uses = 0;
  json_array_foreach(steps, i, st) {
    const char *at = json_string_value(json_object_get(st, "at"));
    int nact = 0;
    for (int a = 0; splice_actions[a]; a++)
      nact += json_object_get(st, splice_actions[a]) != NULL;
    json_t *thr = json_is_object(st) ? json_object_get(st, "through") : NULL;
    if (!json_is_object(st) || !at || !*at || strchr(at, '\n') || nact != 1 ||
        json_object_size(st) != 2u + (thr != NULL)) {
      snprintf(why, cap, "step %zu must be {\"at\": TEXT (one line's), and one action}", i + 1);
      return 1;
    }
    if (thr && (!json_is_string(thr) || !*json_string_value(thr) ||
                strchr(json_string_value(thr), '\n') || !json_object_get(st, "replace"))) {
      snprintf(why, cap, "step %zu: 'through' must be TEXT (one line's), with 'replace'", i + 1);
      return 1;
    }
    json_t *ind = json_object_get(st, "indent");
    if (ind) {
      if (!json_is_integer(ind) || json_integer_value(ind) < 1 || json_integer_value(ind) > 16) {
        snprintf(why, cap, "step %zu: 'indent' must be an integer in 1..16 (spaces)", i + 1);
        return 1;
      }
      continue;
    }
    json_t *lines = json_object_get(st, "replace");
    int rep = lines != NULL;
    if (!lines)
      lines = json_object_get(st, json_object_get(st, "before") ? "before" : "after");
    if (!json_is_array(lines) || (!rep && !json_array_size(lines))) {
      snprintf(why, cap, "step %zu: the lines must be an array of strings%s", i + 1,
               rep ? "" : " (at least one)");
      return 1;
    }
    json_array_foreach(lines, k, x) {
      const char *l = json_string_value(x);
      if (!l || strchr(l, '\n')) {
        snprintf(why, cap, "step %zu: line %zu must be a string without a newline", i + 1, k + 1);
        return 1;
      }
      uses |= strstr(l, "{V}") != NULL;
    }
  }
  if (uses != (vals != NULL)) {
    snprintf(why, cap, vals ? "it has values but no line uses {V}"
                            : "a line uses {V} but the edit has no values");
    return 1;
  }
  return 0;
}

static int check_entry(const char *text, const char *file, const char *stem, json_t *j,
                       ag_diags *d) {
  int rc = 0;
  static const char *const known[] = {"id",    "title",      "prior",   "targets", "precondition",
                                      "gain",  "invariants", "example", "doc",     "edit", NULL};
  const char *key;
  json_t *v;
  if (!json_is_object(j)) {
    AG__JSON_ERR(NULL, 0, 0, "a knowledge-base entry is a JSON object (docs/optimize.md)");
    return rc;
  }
  json_object_foreach(j, key, v) {
    if (!ag__key_known(key, known)) {
      const char *kp[] = {key};
      AG__JSON_ERR(kp, 1, 0, "unknown key '%s' in a knowledge-base entry", key);
    }
  }
  const char *kid[] = {"id"};
  v = json_object_get(j, "id");
  if (!json_is_string(v) || strcmp(json_string_value(v), stem))
    AG__JSON_ERR(kid, 1, 1, "'id' must be a string equal to the file's name ('%s')", stem);
  const char *kt[] = {"title"};
  if (!json_is_string(json_object_get(j, "title")))
    AG__JSON_ERR(kt, 1, 1, "'title' must be a string");
  const char *kpr[] = {"prior"};
  v = json_object_get(j, "prior");
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100)
    AG__JSON_ERR(kpr, 1, 1, "'prior' must be an integer in 0..100 (the rank without evidence)");
  const char *ktg[] = {"targets"};
  if (!json_is_string(json_object_get(j, "targets")))
    AG__JSON_ERR(ktg, 1, 1, "'targets' must be a string: the region whose share of time ranks the "
                    "entry (\"mainloop\")");
  /* precondition */
  json_t *pre = json_object_get(j, "precondition");
  const char *kp[] = {"precondition"};
  json_t *prog = json_is_object(pre) ? json_object_get(pre, "program") : NULL;
  json_t *ev = json_is_object(pre) ? json_object_get(pre, "evidence") : NULL;
  if (!json_is_object(pre) || !json_is_array(prog) || (ev && !json_is_array(ev)))
    AG__JSON_ERR(kp, 1, 1, "'precondition' must be {\"program\": [...], \"evidence\": [...]}");
  else {
    size_t i;
    json_t *c;
    json_array_foreach(prog, i, c) {
      const char *kpp[] = {"precondition", "program"};
      json_t *cn = json_object_get(c, "const");
      int nops = 0;
      for (int k = 0; cmp_ops[k]; k++)
        if (json_object_get(c, cmp_ops[k])) {
          nops++;
          if (!json_is_integer(json_object_get(c, cmp_ops[k])))
            nops = 99;
        }
      if (json_is_string(cn) && nops == 1 && json_object_size(c) == 2)
        continue;
      if (json_object_size(c) == 1 && (json_is_string(json_object_get(c, "contains")) ||
                                       json_is_string(json_object_get(c, "not_contains"))))
        continue;
      AG__JSON_ERR(kpp, 2, 1, "program precondition %zu must be {\"const\": NAME, OP: integer} (OP "
                      "lt le gt ge eq ne), {\"contains\": TEXT} or {\"not_contains\": TEXT}",
           i + 1);
    }
    json_array_foreach(ev, i, c) {
      const char *kpe[] = {"precondition", "evidence"};
      char what[256];
      if (evidence_term(c, 0, what, sizeof what))
        AG__JSON_ERR(kpe, 2, 1, "evidence precondition %zu%s%s", i + 1,
                     strncmp(what, "must", 4) ? ": " : " ", what);
    }
  }
  /* gain: the factors of the expected gain (evidence metrics) */
  json_t *gain = json_object_get(j, "gain");
  const char *kg[] = {"gain"};
  if (gain && !json_is_array(gain))
    AG__JSON_ERR(kg, 1, 1, "'gain' must be an array of factors (docs/optimize.md)");
  else {
    size_t i;
    json_t *c;
    json_array_foreach(gain, i, c) {
      char what[256];
      if (evidence_term(c, 1, what, sizeof what))
        AG__JSON_ERR(kg, 1, 1, "gain factor %zu: %s", i + 1, what);
    }
  }
  /* edit */
  json_t *e = json_object_get(j, "edit");
  const char *ke[] = {"edit"};
  const char *kind = json_string_value(json_object_get(e, "kind"));
  if (!json_is_object(e) || !kind)
    AG__JSON_ERR(ke, 1, 1, "'edit' must be an object with a 'kind' (set_const, rewrite or splice)");
  else if (!strcmp(kind, "set_const")) {
    json_t *vals = json_object_get(e, "values");
    int good = json_is_string(json_object_get(e, "name")) && json_is_array(vals) &&
               json_array_size(vals) > 0;
    size_t i;
    json_t *x;
    json_array_foreach(vals, i, x) good &= json_is_integer(x) && json_integer_value(x) > 0;
    json_t *rn = json_object_get(e, "rename");
    const char *pc = json_string_value(rn);
    good &= !rn || (pc && strchr(pc, '%') && strchr(pc, '%') == strrchr(pc, '%'));
    if (!good || json_object_size(e) != 3u + (rn != NULL))
      AG__JSON_ERR(ke, 1, 1, "a set_const edit is {\"kind\": \"set_const\", \"name\": NAME, "
                     "\"values\": [positive integers][, \"rename\": TEXT with one %% (the "
                     "value: every TEXT of the old value becomes TEXT of the new)]}");
  } else if (!strcmp(kind, "rewrite")) {
    json_t *f = json_object_get(e, "from"), *t = json_object_get(e, "to");
    json_t *lc = json_object_get(e, "line_contains"), *un = json_object_get(e, "unless");
    size_t want = 3 + (lc != NULL) + (un != NULL);
    if (!json_is_string(f) || !json_string_length(f) || !json_is_string(t) ||
        (lc && !json_is_string(lc)) || (un && !json_is_string(un)) ||
        json_object_size(e) != want || !strcmp(json_string_value(f), json_string_value(t)))
      AG__JSON_ERR(ke, 1, 1, "a rewrite edit is {\"kind\": \"rewrite\", \"from\": TEXT, \"to\": "
                     "OTHER TEXT[, \"line_contains\": TEXT][, \"unless\": TEXT]}");
  } else if (!strcmp(kind, "splice")) {
    char what[256];
    if (splice_check(e, what, sizeof what))
      AG__JSON_ERR(ke, 1, 1, "a splice edit is {\"kind\": \"splice\"[, \"name\": NAME, \"values\": "
                     "[positive integers]], \"steps\": [{\"at\": TEXT, ACTION}, ...]} (ACTION "
                     "\"replace\", \"before\" or \"after\": [LINES], or \"indent\": 1..16; a "
                     "\"replace\" may have \"through\": TEXT): %s",
                   what);
  } else {
    const char *kk[] = {"edit", "kind"};
    AG__JSON_ERR(kk, 2, 1, "unknown edit kind '%s' (set_const, rewrite, splice)", kind);
  }
  /* invariants */
  json_t *inv = json_object_get(j, "invariants");
  const char *ki[] = {"invariants"};
  int good = json_is_array(inv) && json_array_size(inv) > 0;
  size_t i;
  json_t *x;
  json_array_foreach(inv, i, x) {
    const char *s = json_string_value(x);
    good &= s && (!strcmp(s, "assertions") || !strcmp(s, "bounds") || !strcmp(s, "races"));
  }
  if (!good)
    AG__JSON_ERR(ki, 1, 1, "'invariants' must be a non-empty array of \"assertions\" (every tag "
                   "assertion still proved, none removed), \"bounds\", \"races\"");
  /* example */
  json_t *ex = json_object_get(j, "example");
  const char *kx[] = {"example"};
  json_t *eo = json_object_get(ex, "outputs");
  if (!json_is_object(ex) || !json_is_string(json_object_get(ex, "program")) ||
      !json_is_string(json_object_get(ex, "sizes")) ||
      (eo && (!json_array_size(eo) || !ag_json_all_strings(eo, 1))) ||
      json_object_size(ex) != 2u + (eo != NULL))
    AG__JSON_ERR(kx, 1, 1, "'example' must be {\"program\": FILE.tile (relative to the repository), "
                   "\"sizes\": \"M=64,...\"[, \"outputs\": [TENSOR, ...] (default [\"C\"])]}: the "
                   "test applies the entry to it");
  return rc;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int ag_kb_load(const char *dir, ag_diags *d, ag_kb *out) {
  memset(out, 0, sizeof *out);
  DIR *dh = opendir(dir);
  if (!dh) {
    ag_diags_add(d, AG_SEV_ERROR, dir, 0, 0, NULL, 0,
                 "cannot open the knowledge base '%s' (a directory of *.json entries; "
                 "--kb DIR or ARGUS_KB_DIR)", dir);
    return AG_ENOTFOUND;
  }
  char **names = NULL;
  int n = 0, cap = 0, rc = 0;
  struct dirent *de;
  while ((de = readdir(dh))) {
    size_t l = strlen(de->d_name);
    if (l < 6 || strcmp(de->d_name + l - 5, ".json") || de->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      char **nn = ag_realloc(names, (size_t)cap * sizeof *nn);
      if (!nn) {
        rc = AG_ENOMEM;
        break;
      }
      names = nn;
    }
    if (!(names[n] = ag_strdup(de->d_name))) {
      rc = AG_ENOMEM;
      break;
    }
    n++;
  }
  closedir(dh);
  if (!rc && n)
    qsort(names, (size_t)n, sizeof *names, cmp_names);
  if (!rc && !(out->e = ag_calloc((size_t)(n ? n : 1), sizeof *out->e)))
    rc = AG_ENOMEM;
  for (int i = 0; !rc && i < n; i++) {
    size_t pl = strlen(dir) + strlen(names[i]) + 2;
    char *path = ag_malloc(pl), *text = NULL, *stem = ag_strndup(names[i], strlen(names[i]) - 5);
    size_t len;
    json_t *j = NULL;
    if (!path || !stem) {
      rc = AG_ENOMEM;
    } else {
      snprintf(path, pl, "%s/%s", dir, names[i]);
      int r = ag_file_read(path, &text, &len);
      if (r)
        rc = r;
      else if (!(r = ag_json_load_str(text, path, d, &j)) && !(r = check_entry(text, path, stem, j, d))) {
        ag_kb_entry *e = &out->e[out->n++];
        e->j = j;
        e->file = path;
        e->id = stem;
        j = NULL;
        path = stem = NULL;
      } else if (r) {
        rc = r;
      }
    }
    json_decref(j);
    ag_free(text);
    ag_free(path);
    ag_free(stem);
  }
  if (!rc && !out->n) {
    ag_diags_add(d, AG_SEV_ERROR, dir, 0, 0, NULL, 0,
                 "the knowledge base '%s' has no entries (*.json)", dir);
    rc = AG_EPARSE;
  }
  for (int i = 0; i < n; i++)
    ag_free(names[i]);
  ag_free(names);
  if (rc)
    ag_kb_release(out);
  return rc;
}

void ag_kb_release(ag_kb *kb) {
  for (int i = 0; kb->e && i < kb->n; i++) {
    ag_free(kb->e[i].id);
    ag_free(kb->e[i].file);
    json_decref(kb->e[i].j);
  }
  ag_free(kb->e);
  memset(kb, 0, sizeof *kb);
}

/* ------------------------------------------------------- preconditions */

int ag_kb_applies(const ag_kb_entry *e, const char *src, ag_str *why) {
  json_t *prog = json_object_get(json_object_get(e->j, "precondition"), "program");
  size_t i;
  json_t *c;
  json_array_foreach(prog, i, c) {
    const char *s;
    if ((s = json_string_value(json_object_get(c, "contains")))) {
      if (!strstr(src, s)) {
        if (why)
          ag_str_printf(why, "the program does not contain '%s'", s);
        return 0;
      }
      continue;
    }
    if ((s = json_string_value(json_object_get(c, "not_contains")))) {
      if (strstr(src, s)) {
        if (why)
          ag_str_printf(why, "the program contains '%s'", s);
        return 0;
      }
      continue;
    }
    const char *name = json_string_value(json_object_get(c, "const"));
    int64_t val;
    if (ag_tile_src_const(src, name, &val)) {
      if (why)
        ag_str_printf(why, "the program has no module-level constant '%s = N'", name);
      return 0;
    }
    for (int k = 0; cmp_ops[k]; k++) {
      json_t *o = json_object_get(c, cmp_ops[k]);
      if (!o)
        continue;
      int64_t w = (int64_t)json_integer_value(o);
      int ok = k == 0 ? val < w : k == 1 ? val <= w : k == 2 ? val > w : k == 3 ? val >= w
                                                        : k == 4 ? val == w : val != w;
      if (!ok) {
        if (why)
          ag_str_printf(why, "%s is %lld, not %s %lld", name, (long long)val, cmp_ops[k],
                        (long long)w);
        return 0;
      }
    }
  }
  return 1;
}

const json_t *ag_kb_values(const ag_kb_entry *e) {
  return json_object_get(json_object_get(e->j, "edit"), "values");
}

/* ---------------------------------------------------------------- edits */

/* Every occurrence in o of template t (one '%') with the value from
 * becomes t with the value to (an instruction whose shape is the
 * constant: wgmma_m64n%k16). */
static int rename_all(ag_str *o, const char *t, long long from, long long to) {
  char a[128], b[128];
  const char *pc = strchr(t, '%');
  snprintf(a, sizeof a, "%.*s%lld%s", (int)(pc - t), t, from, pc + 1);
  snprintf(b, sizeof b, "%.*s%lld%s", (int)(pc - t), t, to, pc + 1);
  ag_str r = AG_STR_INIT;
  const char *p = ag_str_cstr(o), *q;
  while ((q = strstr(p, a))) {
    ag_str_append(&r, p, (size_t)(q - p));
    ag_str_puts(&r, b);
    p = q + strlen(a);
  }
  ag_str_puts(&r, p);
  if (r.oom) {
    ag_str_release(&r);
    return AG_ENOMEM;
  }
  ag_str_release(o);
  *o = r;
  return 0;
}

/* The end of the line that starts at l (past its newline). */
static const char *line_end(const char *l) {
  const char *nl = strchr(l, '\n');
  return nl ? nl + 1 : l + strlen(l);
}

/* 1 when line l (up to e) is blank or a comment only. */
static int line_blank(const char *l, const char *e) {
  while (l < e && (*l == ' ' || *l == '\t'))
    l++;
  return l == e || *l == '\n' || *l == '#';
}

/* Appends each line of lines, after indentation ind (n bytes), with {V}
 * as the value text vt. */
static void put_lines(ag_str *o, const json_t *lines, const char *ind, size_t n, const char *vt) {
  size_t i;
  json_t *x;
  json_array_foreach(lines, i, x) {
    const char *p = json_string_value(x), *q;
    ag_str_append(o, ind, n);
    while ((q = strstr(p, "{V}"))) {
      ag_str_append(o, p, (size_t)(q - p));
      ag_str_puts(o, vt);
      p = q + 3;
    }
    ag_str_puts(o, p);
    ag_str_puts(o, "\n");
  }
}

/* 1 when the line that starts at l holds text t. */
static int strstr_in_line(const char *l, const char *t) {
  const char *f = strstr(l, t);
  return f && f + strlen(t) <= line_end(l);
}

/* One step of a splice on src into o: AG_EINVAL (why says) when its
 * anchor is on no line or on several. */
static int splice_step(const json_t *st, size_t k, const char *src, const char *vt, ag_str *o,
                       ag_str *why) {
  const char *at = json_string_value(json_object_get(st, "at")), *line = NULL;
  int n = 0;
  for (const char *l = src; *l; l = line_end(l)) {
    if (strstr_in_line(l, at) && !n++)
      line = l;
  }
  if (n != 1) {
    if (why)
      ag_str_printf(why, "splice step %zu: '%s' is on %s line%s of the program (the anchor "
                         "must be on exactly one)", k + 1, at, n ? "more than one" : "no",
                    n ? "s" : "");
    return AG_EINVAL;
  }
  const char *le = line_end(line), *ind = line;
  const char *thr = json_string_value(json_object_get(st, "through"));
  if (thr) { /* the anchor's line through the first line after it holding thr */
    const char *l = le;
    while (*l && !strstr_in_line(l, thr))
      l = line_end(l);
    if (!*l) {
      if (why)
        ag_str_printf(why, "splice step %zu: '%s' is on no line after '%s'", k + 1, thr, at);
      return AG_EINVAL;
    }
    le = line_end(l);
  }
  while (*ind == ' ')
    ind++;
  size_t w = (size_t)(ind - line);
  ag_str_append(o, src, (size_t)(line - src));
  json_t *lines;
  if ((lines = json_object_get(st, "replace"))) {
    put_lines(o, lines, line, w, vt);
  } else if ((lines = json_object_get(st, "before"))) {
    put_lines(o, lines, line, w, vt);
    ag_str_append(o, line, (size_t)(le - line));
  } else if ((lines = json_object_get(st, "after"))) {
    ag_str_append(o, line, (size_t)(le - line));
    if (le[-1] != '\n')
      ag_str_puts(o, "\n");
    put_lines(o, lines, line, w, vt);
  } else { /* indent: the anchor and the rest of its block */
    int by = (int)json_integer_value(json_object_get(st, "indent"));
    for (; *line; line = le) {
      le = line_end(line);
      const char *p = line;
      while (*p == ' ')
        p++;
      if (!line_blank(line, le) && (size_t)(p - line) < w)
        break;
      if (!line_blank(line, le) || *p == '#')
        ag_str_printf(o, "%*s", by, "");
      ag_str_append(o, line, (size_t)(le - line));
    }
    le = line; /* the first line after the block */
  }
  ag_str_puts(o, le);
  return 0;
}

/* Applies splice edit ed to src: every step in order, each on the
 * previous one's result. */
static int splice_apply(const json_t *ed, const char *src, const char *vt, ag_str *o,
                        ag_str *why) {
  char *cur = ag_strdup(src);
  size_t i;
  json_t *st;
  int rc = cur ? 0 : AG_ENOMEM;
  json_array_foreach(json_object_get(ed, "steps"), i, st) {
    ag_str t = AG_STR_INIT;
    if (rc || (rc = splice_step(st, i, cur, vt, &t, why)) || (t.oom && (rc = AG_ENOMEM))) {
      ag_str_release(&t);
      break;
    }
    ag_free(cur);
    cur = t.p ? t.p : ag_strdup("");
    if (!cur)
      rc = AG_ENOMEM;
  }
  if (!rc)
    ag_str_puts(o, cur);
  ag_free(cur);
  return rc;
}

int ag_kb_apply(const ag_kb_entry *e, const char *src, const json_t *v, char **out, char **what,
                ag_str *why) {
  *out = *what = NULL;
  json_t *ed = json_object_get(e->j, "edit");
  const char *kind = json_string_value(json_object_get(ed, "kind"));
  ag_str o = AG_STR_INIT, w = AG_STR_INIT;
  int rc = 0;
  if (!strcmp(kind, "set_const")) {
    const char *name = json_string_value(json_object_get(ed, "name")), *vs, *ve;
    if (!json_is_integer(v) || json_integer_value(v) <= 0) {
      if (why)
        ag_str_printf(why, "%s needs a positive integer value", e->id);
      return AG_EINVAL;
    }
    if (!const_line(src, name, &vs, &ve)) {
      if (why)
        ag_str_printf(why, "the program has no module-level constant '%s = N'", name);
      return AG_EINVAL;
    }
    long long nv = (long long)json_integer_value(v);
    if (ve - vs < 19 && strtoll(vs, NULL, 10) == nv) {
      if (why)
        ag_str_printf(why, "%s is %lld already", name, nv);
      return AG_EINVAL;
    }
    ag_str_append(&o, src, (size_t)(vs - src));
    ag_str_printf(&o, "%lld", nv);
    ag_str_puts(&o, ve);
    ag_str_printf(&w, "kb:%s(%s=%lld)", e->id, name, nv);
    const char *rn = json_string_value(json_object_get(ed, "rename"));
    if (rn && !o.oom && (rc = rename_all(&o, rn, strtoll(vs, NULL, 10), nv)))
      goto out;
  } else if (!strcmp(kind, "splice")) {
    const char *name = json_string_value(json_object_get(ed, "name"));
    char vt[32] = "";
    if (name && (!json_is_integer(v) || json_integer_value(v) <= 0)) {
      if (why)
        ag_str_printf(why, "%s needs a positive integer value", e->id);
      return AG_EINVAL;
    }
    if (name)
      snprintf(vt, sizeof vt, "%lld", (long long)json_integer_value(v));
    if ((rc = splice_apply(ed, src, vt, &o, why)))
      goto out;
    if (name)
      ag_str_printf(&w, "kb:%s(%s=%s)", e->id, name, vt);
    else
      ag_str_printf(&w, "kb:%s(%zu step%s)", e->id, json_array_size(json_object_get(ed, "steps")),
                    json_array_size(json_object_get(ed, "steps")) == 1 ? "" : "s");
  } else {
    const char *from = json_string_value(json_object_get(ed, "from"));
    const char *to = json_string_value(json_object_get(ed, "to"));
    const char *lc = json_string_value(json_object_get(ed, "line_contains"));
    const char *un = json_string_value(json_object_get(ed, "unless"));
    int changed = 0;
    for (const char *l = src; *l;) {
      const char *nl = strchr(l, '\n');
      size_t ll = nl ? (size_t)(nl - l) + 1 : strlen(l);
      char *line = ag_strndup(l, ll);
      if (!line) {
        rc = AG_ENOMEM;
        goto out;
      }
      char *f = strstr(line, from);
      if (f && (!lc || strstr(line, lc)) && (!un || !strstr(line, un))) {
        ag_str_append(&o, line, (size_t)(f - line));
        ag_str_puts(&o, to);
        ag_str_puts(&o, f + strlen(from));
        changed++;
      } else {
        ag_str_puts(&o, line);
      }
      ag_free(line);
      l += ll;
    }
    if (!changed) {
      if (why)
        ag_str_printf(why, "no line of the program has '%s'%s%s%s%s", from, lc ? " with '" : "",
                      lc ? lc : "", lc ? "'" : "", un ? " (without the 'unless' text)" : "");
      rc = AG_EINVAL;
      goto out;
    }
    ag_str_printf(&w, "kb:%s(%d sites)", e->id, changed);
  }
  if (o.oom || w.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  *out = o.p ? o.p : ag_strdup("");
  *what = w.p;
  o.p = w.p = NULL;
  if (!*out)
    rc = AG_ENOMEM;
out:
  ag_str_release(&o);
  ag_str_release(&w);
  return rc;
}

/* ------------------------------------------------------------- signals */

static void add_signal(ag_str *out, const json_t *c) {
  const char *s = json_string_value(json_object_get(c, "signal"));
  if (!s)
    return;
  /* whole names in the comma list */
  for (const char *p = ag_str_cstr(out); p; p = strchr(p, ','), p = p ? p + 1 : NULL)
    if (!strncmp(p, s, strlen(s)) && (p[strlen(s)] == ',' || !p[strlen(s)]))
      return;
  ag_str_printf(out, ",%s", s);
}

int ag_kb_signals(const ag_kb *kb, ag_str *out) {
  ag_str_puts(out, "duration");
  for (int i = 0; i < kb->n; i++) {
    size_t k;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(kb->e[i].j, "precondition"), "evidence"),
                       k, c) add_signal(out, c);
    json_array_foreach(json_object_get(kb->e[i].j, "gain"), k, c) add_signal(out, c);
  }
  return out->oom ? AG_ENOMEM : 0;
}
