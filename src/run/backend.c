/*
 * backend.c — a set of backend adapters (argus/backend.h): the executor
 * table the scheduler dispatches from (the adapters' executors first, a
 * generic variant transform for every adapter variant no adapter
 * transforms itself, then the driver's generic executors) and the check
 * that the adapters and the recipe rows agree. Built once per query over a
 * handful of adapters; lookups are linear.
 */
#include "argus/backend.h"

#include <string.h>

static int has_exec(const ag_backend_set *s, const char *op) {
  for (size_t i = 0; i < s->execs.n; i++)
    if (!strcmp(s->execs.v[i].op, op))
      return 1;
  return 0;
}

int ag_backend_set_init(ag_backend_set *s, const ag_backend *const *list, int n,
                        const ag_executor *generic, size_t ngeneric, ag_exec_fn variant_fn,
                        ag_diags *d) {
  memset(s, 0, sizeof *s);
  ag_arena_init(&s->arena, 0);
  int rc = 0;
  for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++) {
    const ag_backend *b = list[i];
    if (!b || !b->name) {
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, "backend %d of the set has no name", i);
      rc = AG_EINVAL;
      goto fail;
    }
    if (ag_backend_find(s, b->name)) {
      ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0,
                   "backend '%s' is in the set twice: give each adapter its own name", b->name);
      rc = AG_EINVAL;
      goto fail;
    }
    if ((rc = ag_vec_push(&s->backends, b)))
      goto fail;
    for (size_t k = 0; k < b->nexecs; k++)
      if ((rc = ag_vec_push(&s->execs, b->execs[k])))
        goto fail;
  }
  /* the generic variant transform for the variants no adapter transforms */
  for (size_t i = 0; variant_fn && i < s->backends.n; i++) {
    const char *v = s->backends.v[i]->variant;
    if (!v)
      continue;
    char *op = ag_arena_printf(&s->arena, "transform.%s", v);
    if (!op) {
      rc = AG_ENOMEM;
      goto fail;
    }
    if (!has_exec(s, op) && (rc = ag_vec_push(&s->execs, ((ag_executor){op, variant_fn}))))
      goto fail;
  }
  for (size_t i = 0; i < ngeneric; i++)
    if (!has_exec(s, generic[i].op) && (rc = ag_vec_push(&s->execs, generic[i])))
      goto fail;
  return 0;
fail:
  ag_backend_set_release(s);
  return rc;
}

void ag_backend_set_release(ag_backend_set *s) {
  ag_vec_free(&s->backends);
  ag_vec_free(&s->execs);
  ag_arena_release(&s->arena);
  memset(s, 0, sizeof *s);
}

const ag_backend *ag_backend_find(const ag_backend_set *s, const char *name) {
  for (size_t i = 0; name && i < s->backends.n; i++)
    if (!strcmp(s->backends.v[i]->name, name))
      return s->backends.v[i];
  return NULL;
}

const ag_backend *ag_backend_for_evidence(const ag_backend_set *s, const char *evidence) {
  for (size_t i = 0; evidence && i < s->backends.n; i++)
    for (const char *const *e = s->backends.v[i]->evidence; e && *e; e++)
      if (!strcmp(*e, evidence))
        return s->backends.v[i];
  return NULL;
}

const ag_backend *ag_backend_collector(const ag_backend_set *s, const char *collector) {
  for (size_t i = 0; collector && i < s->backends.n; i++) {
    const ag_backend *b = s->backends.v[i];
    if (b->collect && b->collector && !strcmp(b->collector, collector))
      return b;
  }
  return NULL;
}

const ag_backend *ag_backend_for_op(const ag_backend_set *s, const char *op) {
  for (size_t i = 0; op && i < s->backends.n; i++) {
    const ag_backend *b = s->backends.v[i];
    for (size_t k = 0; k < b->nexecs; k++)
      if (!strcmp(b->execs[k].op, op))
        return b;
  }
  return NULL;
}

static int same(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

#define BAD(...)                                                                               \
  do {                                                                                         \
    ag_diags_add(d, AG_SEV_ERROR, NULL, 0, 0, NULL, 0, __VA_ARGS__);                           \
    bad = 1;                                                                                   \
  } while (0)

int ag_backend_set_check(const ag_backend_set *s, const ag_recipe_table *t, ag_diags *d) {
  int bad = 0;
  for (size_t i = 0; i < t->nkinds; i++) {
    const ag_evidence_kind *ek = &t->kinds[i];
    const ag_backend *b = ag_backend_for_evidence(s, ek->name);
    int owners = 0;
    for (size_t k = 0; k < s->backends.n; k++)
      for (const char *const *e = s->backends.v[k]->evidence; e && *e; e++)
        owners += !strcmp(*e, ek->name);
    if (!b) {
      BAD("evidence '%s' has no backend adapter: add a src/run/backend_<name>.c that lists "
          "it (docs/backends.md)",
          ek->name);
      continue;
    }
    if (owners > 1)
      BAD("evidence '%s' is provided by %d backend adapters: give it to one", ek->name, owners);
    if (!same(b->collector, ek->backend))
      BAD("evidence '%s' is collected by '%s' but its backend '%s' declares collector '%s'",
          ek->name, ek->backend ? ek->backend : "(no run)", b->name,
          b->collector ? b->collector : "(no run)");
    if (!same(b->variant, ek->variant))
      BAD("evidence '%s' needs the '%s' variant but its backend '%s' makes '%s'", ek->name,
          ek->variant ? ek->variant : "(none)", b->name, b->variant ? b->variant : "(none)");
    if (ek->effects & ~b->effects) {
      ag_str have = AG_STR_INIT, want = AG_STR_INIT;
      ag_effects_format(ek->effects, &want);
      ag_effects_format(b->effects, &have);
      BAD("evidence '%s' has effects %s but its backend '%s' declares only %s: declare them "
          "in the adapter",
          ek->name, ag_str_cstr(&want), b->name, ag_str_cstr(&have));
      ag_str_release(&have);
      ag_str_release(&want);
    }
  }
  for (size_t i = 0; i < t->nrecipes; i++) {
    const ag_recipe *r = &t->recipes[i];
    if (!has_exec(s, r->synth))
      BAD("signal '%s' needs synthesis rule '%s' that no backend adapter executes", r->signal,
          r->synth);
    if (!ag_evidence_table_find(t, r->evidence))
      BAD("signal '%s' names evidence '%s' that the recipe table does not have", r->signal,
          r->evidence);
  }
  for (size_t i = 0; i < s->backends.n; i++)
    for (size_t k = i + 1; k < s->backends.n; k++) {
      const ag_backend *a = s->backends.v[i], *b = s->backends.v[k];
      if (a->collect && b->collect && a->collector && same(a->collector, b->collector))
        BAD("backends '%s' and '%s' both have a collect hook for collector '%s': give it to "
            "one",
            a->name, b->name, a->collector);
    }
  return bad ? AG_EINVAL : 0;
}
