/*
 * argus/tile_check.h — compile-time checking of a tile program's data-flow
 * invariants (src/tile/check): tag propagation by symbolic interpretation,
 * tag assertions discharged with Z3, counterexamples for violations.
 *
 * The checker unrolls loops, interprets each kernel for one symbolic thread
 * (thread index, block index and problem sizes are symbols), tracks tags in
 * registers and shared memory, and turns every instance of a tag assertion
 * into a bit-vector query. See docs/check.md for the encoding and the
 * report format. Library code: never prints, never exits.
 */
#ifndef ARGUS_TILE_CHECK_H
#define ARGUS_TILE_CHECK_H

#include "argus/tile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default resource limits (docs/check.md, "Limits"): a loop whose unrolled
 * size exceeds the statement limit is refused before it runs. */
#define AG_TILE_MAX_STEPS 1000000
#define AG_TILE_MAX_WRITES 4096
#define AG_TILE_MAX_MEMORY_MIB 128
#define AG_SMT_MAX_MEMORY_MIB 512 /* Z3's memory per query (its max_memory), MiB */

typedef struct ag_tile_check_opts {
  uint64_t rlimit;        /* Z3 resource limit per query (0: default 20,000,000) */
  int batch;              /* assertion instances per query (0: default 32) */
  int64_t max_steps;      /* interpreted statements per kernel (0: AG_TILE_MAX_STEPS) */
  int64_t max_writes;     /* shared-memory write records per kernel (0: AG_TILE_MAX_WRITES) */
  int64_t max_memory_mib; /* the interpreter's arena per kernel, MiB (0: AG_TILE_MAX_MEMORY_MIB) */
  const char *const *defines; /* "NAME=VALUE" overrides of const parameters */
  int ndefines;
  int all;                /* keep checking an assertion after its first counterexample */
  int strict;             /* an assertion never reached is an error, not a warning */
  const char *const *symbolic; /* const parameters checked as problem sizes instead */
  int nsymbolic;
  int unroll;             /* unroll every loop with constant bounds (no summaries) */
} ag_tile_check_opts;

/* The options from a JSON object, as the C API and argus mcp take them:
 * "set" {NAME: integer} (defines "NAME=VALUE"), "symbolic" [NAME], "unroll",
 * "all", "strict" (true), "rlimit", "batch", "max_steps", "max_writes",
 * "max_memory_mib" (integers); absent keys keep 0. The caller has checked
 * the types. The defines and the symbolic list are allocated (the names
 * borrowed from j, which must outlive o): release them with
 * ag_tile_check_opts_release. AG_ENOMEM (o released). */
int ag_tile_check_opts_from_json(const json_t *j, ag_tile_check_opts *o);
void ag_tile_check_opts_release(ag_tile_check_opts *o);

typedef enum ag_tile_status {
  AG_TILE_PROVED = 0,     /* holds for every block, thread and problem size */
  AG_TILE_VIOLATED,       /* a counterexample exists */
  AG_TILE_UNKNOWN,        /* the solver hit its resource limit */
  AG_TILE_VACUOUS         /* never reached under these sizes and assumptions, and that is an
                             error: under `strict`, or when no assertion of the kernel is
                             reached (otherwise it is proved, with a warning) */
} ag_tile_status;

typedef struct ag_tile_kv {
  char *name;
  int64_t value;
} ag_tile_kv;

/* One side of a violated assertion. */
typedef struct ag_tile_cex_side {
  char *expr;      /* the source text, e.g. "tag(fa[e])" */
  char *tag;       /* "(37, 5)", "top", "bot" */
  char *element;   /* the data element it came from, "A[37, 5]" (NULL: none) */
  char *via;       /* how it got there: "shared sA byte 1024, written by thread 12
                      at gemm.tile:30:9" (NULL: not through shared memory) */
  char *tag_other; /* when the side is top: the second, conflicting tag */
  char *element_other;
  char *via_other;
} ag_tile_cex_side;

typedef struct ag_tile_cex {
  int64_t block[3];
  int64_t thread;          /* linear thread index in the block */
  int64_t tidx[3];         /* the same thread as threadIdx (x, y, z), from @threads */
  int64_t warp, lane;
  int64_t other;           /* a race: the other (writing) thread; -1: none */
  int64_t other_tidx[3];
  ag_tile_kv *sizes;       /* problem sizes of the counterexample */
  int nsizes;
  ag_tile_kv *loops;       /* loop variables at the failing instance */
  int nloops;
  char *reason;            /* "the tags differ", "the left side is top: ..." */
  ag_tile_cex_side lhs, rhs;
} ag_tile_cex;

typedef struct ag_tile_assert_result {
  char *kernel;
  int line, col;
  char *text;              /* the assertion as written */
  ag_tile_status status;
  int64_t instances;       /* unrolled instances checked */
  ag_tile_cex *cex;        /* when violated (the first found) */
  int64_t violations;      /* violating instances found (all of them under `all`) */
  ag_tile_cex **more;      /* under `all`: the counterexamples of the other violating
                              instances, in the order found (nmore of them) */
  int nmore;
  int bounds;              /* 1: not an assert statement but the implicit "every index is
                              within its mode" obligation of an access (listed only when
                              not proved; the proved ones are counted in bounds_proved) */
  int race;                /* 1: the implicit "no write-after-read race" obligation of a shared
                              write that follows reads of its buffer in the same barrier
                              interval (listed only when not proved; see races_proved) */
  char *detail;            /* unknown: why */
} ag_tile_assert_result;

/* A loop the checker proved without unrolling it (docs/check.md, "Loops"). */
typedef struct ag_tile_loop_note {
  char *kernel;
  int line, col;
  char *var;               /* the loop variable */
  char *how;               /* "K / 32 iterations: 1 unrolled, then 2 + 2q + r for r < 2" */
} ag_tile_loop_note;

typedef struct ag_tile_report {
  char *file;
  ag_tile_assert_result *asserts;
  int nasserts;
  int nkernels;
  int64_t queries;         /* solver calls */
  int64_t bounds_proved;   /* global and shared access sites proved in bounds */
  int64_t races_proved;    /* shared writes proved not to overtake an earlier read */
  double interp_s, solve_s;
  ag_tile_loop_note *loops; /* summarized loops */
  int nloops;
} ag_tile_report;

/* Checks every kernel of a parsed program. Returns 0 with *out set (owned;
 * the verdicts are inside), AG_EPARSE when the program is malformed (with
 * diagnostics: types, shapes, view sizes, unknown names, ...), AG_ESOLVER
 * when Z3 failed, AG_ENOMEM. */
int ag_tile_check(const ag_tile_program *p, const ag_tile_check_opts *o, ag_diags *d,
                  ag_tile_report **out);
/* 1 when every assertion was proved. */
int ag_tile_report_ok(const ag_tile_report *r);
/* The Z3 library's version ("4.8.12.0"); static text. */
const char *ag_tile_z3_version(void);
int ag_tile_report_text(const ag_tile_report *r, ag_str *out);
json_t *ag_tile_report_json(const ag_tile_report *r); /* new reference */
void ag_tile_report_free(ag_tile_report *r);

#ifdef __cplusplus
}
#endif
#endif
