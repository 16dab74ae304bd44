/*
 * task.c — the task file of `argus optimize` (docs/optimize.md, "Task
 * files"): what to optimize, at which sizes, against which reference, on
 * which seeds. Every problem is a diagnostic at the key or value that
 * causes it (core's JSON position scanner, as the spec loader). Read once
 * per run.
 */
#include "argus/agent.h"
#include "agent_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static char *resolve(const char *dir, const char *p) {
  if (p[0] == '/' || !dir[0])
    return ag_strdup(p);
  size_t n = strlen(dir) + strlen(p) + 2;
  char *r = ag_malloc(n);
  if (r)
    snprintf(r, n, "%s/%s", dir, p);
  return r;
}

static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64 || s[0] == '-' || s[0] == '.')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
      return 0;
  return 1;
}


static int file_field(ag_diags *d, const char *text, const char *file, const char *dir,
                      const char *const *kp, int n, const json_t *v, char **out) {
  int rc = 0;
  const char *why;
  if (!json_is_string(v) || !json_string_length(v)) {
    AG__JSON_ERR(kp, n, 1, "'%s' must be a non-empty string: the path of a .tile file", kp[n - 1]);
    return rc;
  }
  if (!(*out = resolve(dir, json_string_value(v))))
    return AG_ENOMEM;
  if (ag_file_problem(*out, &why))
    AG__JSON_ERR(kp, n, 1, "cannot read '%s' (%s): %s; paths are relative to the task file", kp[n - 1],
        *out, why);
  return rc;
}

/* `key` (sizes or time_sizes): a non-empty object of NAME: positive integer
 * below 2^32, as "M=64,N=64" in *out. With like (the object of 'sizes'),
 * the same names as it, no more and no fewer. */
static int sizes_field(ag_diags *d, const char *text, const char *file, const char *key0,
                       const json_t *v, const json_t *like, char **out) {
  int rc = 0;
  const char *kp[] = {key0};
  const char *key;
  json_t *sv;
  ag_str s = AG_STR_INIT;
  if (!json_is_object(v) || !json_object_size(v)) {
    AG__JSON_ERR(kp, 1, 1, "'%s' must be a non-empty object of NAME: positive integer", key0);
    return rc;
  }
  json_object_foreach((json_t *)v, key, sv) {
    const char *kp2[] = {key0, key};
    json_int_t x = json_is_integer(sv) ? json_integer_value(sv) : 0;
    if (!json_is_integer(sv) || x <= 0 || x >= ((json_int_t)1 << 32))
      AG__JSON_ERR(kp2, 2, 1, "size '%s' must be a positive integer below 2^32", key);
    else if (like && json_is_object(like) && !json_object_get(like, key))
      AG__JSON_ERR(kp2, 2, 0, "'%s' names '%s', which 'sizes' does not: the timing sizes set "
                   "the same names as the correctness sizes", key0, key);
    else
      ag_str_printf(&s, "%s%s=%lld", s.len ? "," : "", key, (long long)x);
  }
  if (like && json_is_object(like)) {
    json_object_foreach((json_t *)like, key, sv) {
      if (!json_object_get(v, key))
        AG__JSON_ERR(kp, 1, 1, "'%s' has no '%s': name every size of 'sizes' (the timing "
                     "sizes replace them all)", key0, key);
    }
  }
  if (s.oom)
    rc = AG_ENOMEM;
  else if (!rc && !(*out = ag_strdup(ag_str_cstr(&s))))
    rc = AG_ENOMEM;
  ag_str_release(&s);
  return rc;
}

int ag_opt_task_load(const char *path, ag_diags *d, ag_opt_task **out) {
  const char *file = path;
  *out = NULL;
  char *text = NULL, *dir = NULL;
  size_t len = 0;
  json_t *j = NULL;
  ag_opt_task *t = ag_calloc(1, sizeof *t);
  int rc = 0;
  if (!t)
    return AG_ENOMEM;
  if ((rc = ag_file_read(path, &text, &len))) {
    const char *why = "cannot be read";
    ag_file_problem(path, &why);
    ag_diags_add(d, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read task file '%s': %s", path,
                 why);
    goto out;
  }
  if ((rc = ag_json_load_str(text, path, d, &j)))
    goto out;
  const char *slash = strrchr(path, '/');
  dir = slash ? ag_strndup(path, (size_t)(slash - path)) : ag_strdup("");
  t->file = ag_strdup(path);
  if (!dir || !t->file) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (!json_is_object(j)) {
    ag_json_diag(d, text, path, NULL, 0, 0, "a task file is a JSON object (docs/optimize.md)");
    rc = AG_EPARSE;
    goto out;
  }
  static const char *const known[] = {"name", "program", "sizes", "time_sizes", "reference",
                                      "seeds", "objective", NULL};
  const char *key;
  json_t *v;
  json_object_foreach(j, key, v) {
    if (!ag__key_known(key, known)) {
      const char *kp[] = {key};
      AG__JSON_ERR(kp, 1, 0, "unknown key '%s' (a task has name, program, sizes, time_sizes, "
                    "reference, seeds, objective)", key);
    }
  }
  /* name */
  {
    const char *kp[] = {"name"};
    v = json_object_get(j, "name");
    if (!v)
      AG__JSON_ERR(NULL, 0, 0, "the task has no 'name' (it names the refs optimize/<name>/...)");
    else if (!json_is_string(v) || !name_ok(json_string_value(v)))
      AG__JSON_ERR(kp, 1, 1, "'name' must be 1-64 of A-Z a-z 0-9 . _ - (not starting with - or .)");
    else if (!(t->name = ag_strdup(json_string_value(v)))) {
      rc = AG_ENOMEM;
      goto out;
    }
  }
  /* program */
  {
    const char *kp[] = {"program"};
    v = json_object_get(j, "program");
    if (!v)
      AG__JSON_ERR(NULL, 0, 0, "the task has no 'program' (the starting .tile file)");
    else {
      int r = file_field(d, text, path, dir, kp, 1, v, &t->program);
      if (r == AG_ENOMEM) {
        rc = r;
        goto out;
      }
      rc = r ? r : rc;
    }
  }
  /* sizes: the correctness sizes; time_sizes: the timing sizes (default: sizes) */
  {
    v = json_object_get(j, "sizes");
    if (!v)
      AG__JSON_ERR(NULL, 0, 0, "the task has no 'sizes' (an object NAME: value, e.g. {\"M\": 64})");
    else {
      int r = sizes_field(d, text, path, "sizes", v, NULL, &t->sizes);
      if (r == AG_ENOMEM) {
        rc = r;
        goto out;
      }
      rc = r ? r : rc;
    }
    json_t *tv = json_object_get(j, "time_sizes");
    if (tv && v) {
      int r = sizes_field(d, text, path, "time_sizes", tv, v, &t->time_sizes);
      if (r == AG_ENOMEM) {
        rc = r;
        goto out;
      }
      rc = r ? r : rc;
    }
  }
  /* reference */
  {
    const char *kp[] = {"reference"};
    v = json_object_get(j, "reference");
    json_t *outs = v ? json_object_get(v, "outputs") : NULL;
    if (!v)
      AG__JSON_ERR(NULL, 0, 0, "the task has no 'reference' (an object with 'outputs': the tensors "
                      "the program computes)");
    else if (!json_is_object(v))
      AG__JSON_ERR(kp, 1, 1, "'reference' must be an object {\"program\", \"outputs\", \"atol\", "
                    "\"rtol\"}");
    if (v && json_is_object(v)) {
      json_t *rv;
      json_object_foreach(v, key, rv) {
        const char *kp2[] = {"reference", key};
        if (!strcmp(key, "program")) {
          int r = file_field(d, text, path, dir, kp2, 2, rv, &t->reference);
          if (r == AG_ENOMEM) {
            rc = r;
            goto out;
          }
          rc = r ? r : rc;
        } else if (!strcmp(key, "atol") || !strcmp(key, "rtol")) {
          if (!json_is_number(rv) || json_number_value(rv) <= 0)
            AG__JSON_ERR(kp2, 2, 1, "'%s' must be a positive number (leave it out for the dtype's "
                           "tolerance, docs/run.md)", key);
          else if (key[0] == 'a')
            t->atol = json_number_value(rv);
          else
            t->rtol = json_number_value(rv);
        } else if (strcmp(key, "outputs")) {
          AG__JSON_ERR(kp2, 2, 0, "unknown key '%s' in 'reference' (program, outputs, atol, rtol)", key);
        }
      }
      const char *kp2[] = {"reference", "outputs"};
      if (!outs)
        AG__JSON_ERR(kp, 1, 0, "'reference' has no 'outputs' (the tensors the program computes, e.g. "
                      "[\"C\"])");
      else if (!json_is_array(outs) || !json_array_size(outs))
        AG__JSON_ERR(kp2, 2, 1, "'outputs' must be a non-empty array of tensor names");
      else if (!ag_json_all_strings(outs, 1))
        AG__JSON_ERR(kp2, 2, 1, "'outputs' must be an array of tensor names (strings)");
      else if (ag_json_strv(outs, &t->outputs, &t->noutputs)) {
        rc = AG_ENOMEM;
        goto out;
      }
      if ((t->atol > 0) != (t->rtol > 0))
        AG__JSON_ERR(kp, 1, 0, "give both 'atol' and 'rtol' or neither");
    }
  }
  /* seeds */
  {
    const char *kp[] = {"seeds"};
    v = json_object_get(j, "seeds");
    if (!v) {
      static const uint64_t dflt[] = {1, 2, 3};
      t->seeds = ag_malloc(sizeof dflt);
      if (!t->seeds) {
        rc = AG_ENOMEM;
        goto out;
      }
      memcpy(t->seeds, dflt, sizeof dflt);
      t->nseeds = 3;
    } else if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 64) {
      AG__JSON_ERR(kp, 1, 1, "'seeds' must be an array of 1 to 64 positive integers");
    } else {
      t->seeds = ag_calloc(json_array_size(v), sizeof *t->seeds);
      if (!t->seeds) {
        rc = AG_ENOMEM;
        goto out;
      }
      size_t i;
      json_t *s;
      json_array_foreach(v, i, s) {
        if (!json_is_integer(s) || json_integer_value(s) <= 0) {
          AG__JSON_ERR(kp, 1, 1, "'seeds' must be an array of 1 to 64 positive integers");
          break;
        }
        t->seeds[t->nseeds++] = (uint64_t)json_integer_value(s);
      }
    }
  }
  /* objective */
  t->samples = 50;
  v = json_object_get(j, "objective");
  if (v) {
    const char *kp[] = {"objective"};
    json_t *m = json_is_object(v) ? json_object_get(v, "metric") : NULL;
    json_t *s = json_is_object(v) ? json_object_get(v, "samples") : NULL;
    if (!json_is_object(v))
      AG__JSON_ERR(kp, 1, 1, "'objective' must be an object {\"metric\": \"time\", \"samples\": N}");
    else {
      json_t *ov;
      json_object_foreach(v, key, ov) {
        if (strcmp(key, "metric") && strcmp(key, "samples")) {
          const char *kp2[] = {"objective", key};
          AG__JSON_ERR(kp2, 2, 0, "unknown key '%s' in 'objective' (metric, samples)", key);
        }
      }
      if (m && (!json_is_string(m) || strcmp(json_string_value(m), "time"))) {
        const char *kp2[] = {"objective", "metric"};
        AG__JSON_ERR(kp2, 2, 1, "'metric' must be \"time\" (the kernel's median time at the task's "
                       "sizes; the only objective so far)");
      }
      if (s) {
        const char *kp2[] = {"objective", "samples"};
        if (!json_is_integer(s) || json_integer_value(s) < 1 || json_integer_value(s) > 10000)
          AG__JSON_ERR(kp2, 2, 1, "'samples' must be an integer in 1..10000");
        else
          t->samples = (int)json_integer_value(s);
      }
    }
  }
  if (!rc && !t->reference && !(t->reference = ag_strdup(t->program)))
    rc = AG_ENOMEM;
out:
  json_decref(j);
  ag_free(text);
  ag_free(dir);
  if (rc)
    ag_opt_task_free(t);
  else
    *out = t;
  return rc;
}

void ag_opt_task_free(ag_opt_task *t) {
  if (!t)
    return;
  ag_free(t->name);
  ag_free(t->file);
  ag_free(t->program);
  ag_free(t->reference);
  ag_free(t->sizes);
  ag_free(t->time_sizes);
  ag_strv_free(t->outputs);
  ag_free(t->seeds);
  ag_free(t);
}
