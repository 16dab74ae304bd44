/*
 * tile_ref.h — a concrete reference interpreter for tile programs, for
 * tests: it runs one block with concrete problem sizes, every thread in
 * lockstep, and tracks for every register and shared-memory byte the tags of
 * the actual data elements that reached it (computed from their actual
 * coordinates). It shares only the parser and the layout library with the
 * checker; integer arithmetic, memory, views, intrinsics (ldmatrix from the
 * PTX ISA's description) and the tag lattice are implemented again here.
 *
 * Semantics it mirrors (docs/tile-dsl.md): integers are 32-bit unsigned;
 * registers are strongly updated; an `if` on a value that depends on the
 * thread, block or a size runs both branches for the registers of every
 * thread and merges them (path-insensitive), while shared-memory writes and
 * assertions happen only for the threads that take the branch; shared
 * memory keeps every write since the last reset; a write is settled for a
 * reader once it is its own write (and, for cp.async, waited for) or after
 * the barrier that follows its completion.
 */
#ifndef ARGUS_TEST_TILE_REF_H
#define ARGUS_TEST_TILE_REF_H

#include "../../src/tile/check/check_int.h"

typedef struct ref_cfg {
  int64_t bid[3];
  int nsizes;
  const char *const *names;
  const int64_t *vals;
  const char *const *defines; /* "NAME=VALUE" */
  int ndefines;
} ref_cfg;

/* One executed assert statement: per thread, the tag sets of both sides
 * and whether the assertion failed for that thread. */
typedef struct ref_inst {
  const ag_tile_node *at;
  int nloops;
  const char *loopname[16];
  int64_t loopval[16];
  int kind; /* 0 ==, 1 !=, 2 integer condition */
  int nthreads;
  const void **lhs, **rhs; /* [nthreads] tag sets (see ref_side) */
  unsigned char *active, *violated;
} ref_inst;

typedef struct ref_run {
  ref_inst *inst;
  int n, cap;
  char err[256];
  void *mem; /* the tag sets instances point to */
} ref_run;

/* The tag set of one side (0 left, 1 right) for one thread. */
void ref_side(const ref_inst *in, int thread, int side, ag__cset *out);

/* Runs the first kernel of p. 0, or -1 with run->err set. */
int ref_execute(const ag_tile_program *p, const ref_cfg *cfg, ref_run *run);
void ref_run_free(ref_run *run);

#endif
