/*
 * agent_int.h — what the files of src/agent share: the error macro of the
 * JSON loaders (task files, KB entries), which reports at a key or value
 * of the document `text` named `file` into the diagnostics `d` and sets
 * `rc` (all four are the caller's locals).
 */
#ifndef ARGUS_AGENT_INT_H
#define ARGUS_AGENT_INT_H

#include "argus/core.h"

#include <string.h>

#define AG__JSON_ERR(...)                                                                      \
  do {                                                                                         \
    ag_json_diag(d, text, file, __VA_ARGS__);                                                 \
    rc = AG_EPARSE;                                                                            \
  } while (0)

/* 1 when key is one of known (NULL-terminated). */
static inline int ag__key_known(const char *key, const char *const *known) {
  for (int i = 0; known[i]; i++)
    if (!strcmp(key, known[i]))
      return 1;
  return 0;
}

#endif
