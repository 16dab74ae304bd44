/*
 * store_test.h — hooks for the store's own tests (not public API): run raw
 * SQL to damage a workspace on purpose, and open with a substitute migration
 * list to exercise schema upgrades and the newer-schema refusal.
 */
#ifndef ARGUS_STORE_TEST_H
#define ARGUS_STORE_TEST_H

#include "argus/store.h"

int ag__store_exec(ag_store *st, const char *sql);
/* Like ag_store_open, with migrations[0..n) instead of the built-in list:
 * the schema version it brings a workspace to is n. */
int ag__store_open_with(const char *path, unsigned flags, const char *const *migrations, int n,
                        ag_store **out);
/* The built-in migration list. */
const char *const *ag__store_migrations(int *n);

#endif
