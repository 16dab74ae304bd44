/*
 * json.c — JSON through jansson, with parse errors turned into diagnostics
 * that carry line and column, and a canonical form for hashing configs.
 */
#include "argus/core.h"

#include <stdlib.h>
#include <string.h>

static int to_diag(const json_error_t *e, const char *name, const char *text,
                   size_t len, ag_diags *diags) {
  if (diags) {
    size_t ll = 0;
    const char *src = text ? ag_text_line(text, len, e->line, &ll) : NULL;
    ag_diags_add(diags, AG_SEV_ERROR, name, e->line, e->column > 0 ? e->column : 1,
                 src, ll, "invalid JSON: %s", e->text);
  }
  return AG_EPARSE;
}

int ag_json_load_str(const char *text, const char *name, ag_diags *diags,
                     json_t **out) {
  json_error_t e;
  *out = json_loads(text, JSON_REJECT_DUPLICATES, &e);
  if (!*out)
    return to_diag(&e, name, text, strlen(text), diags);
  return 0;
}

int ag_json_load_file(const char *path, ag_diags *diags, json_t **out) {
  char *text = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = ag_file_read(path, &text, &len);
  if (rc) {
    if (diags)
      ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0,
                   "cannot read file: %s", ag_strerror(rc));
    return rc;
  }
  json_error_t e;
  *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
  if (!*out)
    rc = to_diag(&e, path, text, len, diags);
  ag_free(text);
  return rc;
}

int ag_json_load_doc(const char *name, const void *data, size_t len, const char *what,
                     ag_diags *diags, json_t **out) {
  json_error_t e;
  *out = data ? json_loadb(data, len, JSON_REJECT_DUPLICATES, &e)
              : json_load_file(name, JSON_REJECT_DUPLICATES, &e);
  if (*out)
    return 0;
  int rc = diags ? ag_diags_add(diags, AG_SEV_ERROR, name, e.line, e.column, NULL, 0,
                                "cannot read %s: %s", what, e.text)
                 : 0;
  return rc ? rc : AG_EPARSE;
}

char *ag_json_canonical(const json_t *j) {
  char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
  if (!s)
    return NULL;
  char *r = ag_strdup(s); /* hand back memory from our own allocator */
  free(s);
  return r;
}
