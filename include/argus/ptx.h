/*
 * argus/ptx.h — the PTX front end: a lossless PTX module IR (parse, edit,
 * print byte-identically), control-flow graphs, and discovery of Argus
 * regions and the operation sites inside them.
 *
 * The IR is a doubly linked list of statements covering the source text
 * exactly: every statement owns the trivia (whitespace) before it and its
 * own text, so printing an unmodified module reproduces the input byte for
 * byte. Comments are statements too (region markers are comments).
 * Transforms edit the list (insert, replace, remove) with statements parsed
 * from PTX text (ag_ptx_parse_snippet); the printer then emits valid PTX.
 *
 * Everything lives in the module's arena and is freed by ag_ptx_module_free.
 * Pointers returned by the accessors are borrowed from the module.
 */
#ifndef ARGUS_PTX_H
#define ARGUS_PTX_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ statements */

typedef enum ag_ptx_kind {
  AG_PTX_COMMENT,     /* "// ..." or a block comment */
  AG_PTX_DIRECTIVE,   /* .version/.target/.address_size/.file/.loc/.pragma/
                         .section .../.callprototype/.branchtargets/... */
  AG_PTX_DECL,        /* .reg/.shared/.global/.const/.local/.param/.tex ... ; */
  AG_PTX_FUNC,        /* a function header: [linkage] .entry|.func ... up to
                         its body's '{' (or through ';' for a prototype) */
  AG_PTX_LABEL,       /* name: */
  AG_PTX_INSTR,       /* [@[!]p] opcode operands ; */
  AG_PTX_BLOCK_BEGIN, /* '{' (a function body or a nested scope) */
  AG_PTX_BLOCK_END,   /* '}' */
  AG_PTX_VERBATIM,    /* text a transform inserted as is, never parsed: the
                         traced variant's marker probes (xform_trace.c). It
                         prints like the statements it holds; analyses see
                         none of them (parse the printed module to analyze) */
} ag_ptx_kind;

typedef enum ag_ptx_opnd_kind {
  AG_PTX_OP_REG,   /* %r1, %tid.x, or a plain name declared as a register */
  AG_PTX_OP_SYM,   /* a name: a variable, label or function */
  AG_PTX_OP_INT,   /* 42, -1, 0x1F, 017, 1U */
  AG_PTX_OP_FLOAT, /* 1.5, 0f3F800000, 0d3FF0000000000000 */
  AG_PTX_OP_SINK,  /* _ */
  AG_PTX_OP_ADDR,  /* [ ... ]: sub[] holds its comma-separated elements */
  AG_PTX_OP_VEC,   /* { ... }: sub[] holds the elements */
  AG_PTX_OP_LIST,  /* ( ... ): call argument lists */
  AG_PTX_OP_EXPR,  /* anything else: sym+4, %r1|%p2, %rd1+-8, ... */
} ag_ptx_opnd_kind;

typedef struct ag_ptx_operand {
  ag_ptx_opnd_kind kind;
  const char *text; /* the operand's exact text (NUL-terminated, arena) */
  int neg;          /* a leading '!' (predicate negation) */
  int64_t ival;     /* AG_PTX_OP_INT; for ADDR: the constant offset */
  double fval;      /* AG_PTX_OP_FLOAT */
  /* ADDR: base register or symbol name (NULL if none); VEC/LIST/ADDR with
   * several elements: sub[] */
  const char *base;
  struct ag_ptx_operand *sub;
  int nsub;
} ag_ptx_operand;

typedef struct ag_ptx_param {
  const char *space; /* ".param" or ".reg" */
  const char *type;  /* ".u64", ".b8", ... (may be NULL) */
  int align;         /* 0 if not given */
  const char *name;
  const char *array; /* "[128]" or NULL */
  int ptr;           /* ".ptr" attribute given */
} ag_ptx_param;

typedef struct ag_ptx_decl_name {
  const char *name;  /* "%r" for "%r<12>", "smem" for "smem[1024]" */
  int count;         /* N of "<N>", 0 if not a parameterized range */
  const char *array; /* "[1024]" / "[]" or NULL */
} ag_ptx_decl_name;

typedef struct ag_ptx_func ag_ptx_func;

typedef struct ag_ptx_stmt {
  struct ag_ptx_stmt *prev, *next;
  ag_ptx_kind kind;
  /* exact source: lead is the whitespace before the statement, text the
   * statement itself (for comments: the comment; for instructions: through
   * the ';'). Spans (pointer + length, not NUL-terminated) into the module's
   * copy of the source or into its arena. */
  const char *lead, *text;
  uint32_t lead_len, text_len;
  int line, col;       /* 1-based, in the parsed source; 0 for inserted */
  int depth;           /* block depth within the function (body = 1) */
  ag_ptx_func *func;   /* owning function, NULL at module level */
  int index;           /* position in the function (ag_ptx_func_renumber) */
  int block;           /* CFG basic block (set by ag_ptx_cfg_build), -1 */

  /* AG_PTX_INSTR */
  const char *guard;   /* guard predicate register or NULL */
  int guard_neg;       /* @!p */
  const char *opcode;  /* full opcode with modifiers: "ld.global.v4.f32" */
  ag_ptx_operand *ops;
  int nops;

  /* AG_PTX_LABEL: name; AG_PTX_DIRECTIVE: ".loc" etc.; AG_PTX_DECL: the
   * state space ".reg"/".shared"/...; AG_PTX_FUNC: the function name */
  const char *name;
  /* AG_PTX_DIRECTIVE: the text after the directive name (trimmed) */
  const char *args;

  /* AG_PTX_DECL */
  const char *type;    /* ".b32", ".pred", ... (may be NULL) */
  int align;           /* .align N or 0 */
  int vec;             /* .v2/.v4 or 0 */
  ag_ptx_decl_name *names;
  int nnames;
  int has_init;        /* "= {...}" initializer present */

  /* AG_PTX_COMMENT */
  int block_comment;   /* 1 for a block comment */
} ag_ptx_stmt;

struct ag_ptx_func {
  const char *name;
  int is_entry;        /* .entry (a kernel) vs .func */
  int is_decl;         /* prototype without a body */
  const char *linkage; /* ".visible", ".extern", ".weak" or NULL */
  ag_ptx_param *params;
  int nparams;
  ag_ptx_param *rets;  /* .func return parameters */
  int nrets;
  ag_ptx_stmt *header; /* the AG_PTX_FUNC statement */
  ag_ptx_stmt *body_open, *body_close; /* NULL for a prototype */
  int nstmts;          /* statements in the body (after renumbering) */
};

typedef struct ag_ptx_module {
  ag_arena arena;
  char *path;          /* the name used in diagnostics (arena) */
  ag_ptx_stmt *first, *last;
  const char *trail;   /* whitespace after the last statement */
  uint32_t trail_len;
  ag_ptx_func **funcs;
  int nfuncs;
  /* from the module directives (NULL / 0 when absent) */
  const char *version, *target;
  int address_size;
} ag_ptx_module;

/* Parses PTX text. On success *out is a new module (owned; free it with
 * ag_ptx_module_free). On malformed input returns AG_EPARSE with at least
 * one diagnostic (file:line:col and the source line) in diags; on OOM
 * AG_ENOMEM. Never crashes or loops on any input. `name` names the source in
 * diagnostics (may be NULL). */
int ag_ptx_parse(const char *text, size_t len, const char *name, ag_diags *diags,
                 ag_ptx_module **out);
int ag_ptx_parse_file(const char *path, ag_diags *diags, ag_ptx_module **out);
void ag_ptx_module_free(ag_ptx_module *m);

/* Appends the module's PTX to out. Byte-identical to the parsed text when
 * the module was not edited. */
int ag_ptx_print(const ag_ptx_module *m, ag_str *out);

/* ---------------------------------------------------------------- editing */
/* Parses body-level PTX (instructions, labels, declarations, comments,
 * scoped blocks) into a detached chain of statements owned by m's arena, to
 * be placed with the functions below. `lead` is whitespace put before each
 * statement when the snippet's own text does not start a statement with
 * whitespace (NULL: keep the snippet's whitespace as written; a newline is
 * always put before the first statement so it starts a line). */
int ag_ptx_parse_snippet(ag_ptx_module *m, ag_ptx_func *f, const char *text,
                         ag_diags *diags, ag_ptx_stmt **first,
                         ag_ptx_stmt **last);
/* Link a chain first..last before / after `at`. */
void ag_ptx_insert_before(ag_ptx_module *m, ag_ptx_stmt *at, ag_ptx_stmt *first,
                          ag_ptx_stmt *last);
void ag_ptx_insert_after(ag_ptx_module *m, ag_ptx_stmt *at, ag_ptx_stmt *first,
                         ag_ptx_stmt *last);
/* Replaces `old` by the chain; the chain's first statement takes old's
 * leading whitespace. */
void ag_ptx_replace(ag_ptx_module *m, ag_ptx_stmt *old, ag_ptx_stmt *first,
                    ag_ptx_stmt *last);
void ag_ptx_remove(ag_ptx_module *m, ag_ptx_stmt *s);
/* Assigns stmt->index 0..n-1 over a function body and sets f->nstmts. */
void ag_ptx_func_renumber(ag_ptx_func *f);
ag_ptx_func *ag_ptx_find_func(const ag_ptx_module *m, const char *name);

/* Opcode helpers. ag_ptx_op_is: opcode equals `prefix` or starts with
 * `prefix` followed by '.' ("cp.async" matches "cp.async.ca.shared.global"
 * but not "cp.asyncx"). ag_ptx_op_has: the opcode contains the modifier
 * (".parity" matches "mbarrier.try_wait.parity.shared::cta.b64"). */
int ag_ptx_op_is(const ag_ptx_stmt *s, const char *prefix);
int ag_ptx_op_has(const ag_ptx_stmt *s, const char *modifier);

/* -------------------------------------------------------------------- CFG */
typedef struct ag_ptx_edge {
  int to;
  enum { AG_PTX_EDGE_FALL, AG_PTX_EDGE_BRANCH, AG_PTX_EDGE_EXIT } kind;
} ag_ptx_edge;

typedef struct ag_ptx_block {
  int id;
  ag_ptx_stmt *first, *last; /* statements of the block (inclusive) */
  ag_ptx_edge *succ;
  int nsucc;
  int *pred;
  int npred;
  int idom;  /* immediate dominator, -1 for the entry and unreachable blocks */
  int loop;  /* innermost natural loop containing the block, -1 if none */
  int reachable;
  int terminator; /* 1 when the block ends in ret/exit/trap */
} ag_ptx_block;

typedef struct ag_ptx_loop {
  int id;
  int header;      /* block id */
  int parent;      /* enclosing loop, -1 */
  int depth;       /* 1 for outermost */
  int *blocks;     /* member block ids, ascending */
  int nblocks;
  int *latches;    /* sources of the back edges */
  int nlatches;
} ag_ptx_loop;

typedef struct ag_ptx_call {
  ag_ptx_stmt *stmt;
  const char *callee; /* NULL for an indirect call */
} ag_ptx_call;

typedef struct ag_ptx_cfg {
  ag_ptx_func *func;
  ag_ptx_block *blocks; /* blocks[0] is the entry */
  int nblocks;
  int exit;             /* id of the virtual exit block (= nblocks - 1) */
  ag_ptx_loop *loops;
  int nloops;
  ag_ptx_call *calls;
  int ncalls;
} ag_ptx_cfg;

/* Builds the CFG of a function with a body: basic blocks over the flattened
 * statement list ({} scopes flattened, labels resolved in their scope),
 * fall-through/branch/exit edges (ret, exit, trap go to a virtual exit
 * block; call falls through and is recorded in calls[]), dominators
 * (Cooper-Harvey-Kennedy) and natural loops. Lives in m's arena. Returns
 * AG_EPARSE with a diagnostic for a branch to an unknown label. */
int ag_ptx_cfg_build(ag_ptx_module *m, ag_ptx_func *f, ag_diags *diags,
                     ag_ptx_cfg **out);
/* 1 if block a dominates block b. */
int ag_ptx_dominates(const ag_ptx_cfg *g, int a, int b);

/* -------------------------------------------------------------- discovery */

/* 64-bit FNV-1a with the published constants (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3), as region.cuh computes it. */
uint64_t ag_ptx_fnv1a(const void *data, size_t n);
/* Region ID: ag_ptx_fnv1a of the qualified name ("gemm_tma/mainloop"). */
uint64_t ag_ptx_region_id(const char *qualified_name);

typedef enum ag_ptx_marker_kind {
  AG_PTX_MARK_BEGIN,
  AG_PTX_MARK_END,
  AG_PTX_MARK_ROLE,
} ag_ptx_marker_kind;

typedef struct ag_ptx_marker {
  ag_ptx_marker_kind kind;
  const char *name;     /* as written: "mainloop" */
  uint64_t name_hash;   /* the hash the marker carries (= ag_ptx_fnv1a(name)) */
  const char *iter;     /* iteration operand ("%r17") or NULL */
  ag_ptx_stmt *stmt;    /* the comment statement */
  int line;
  int region;           /* index in ag_ptx_regions.regions (begin/end) */
} ag_ptx_marker;

/* Parses one comment statement's text as a marker. Returns 1 if it is an
 * "@argus" marker and *mk is filled, 0 if it is an ordinary comment, and
 * AG_EPARSE (with a diagnostic) for a malformed "@argus" comment. */
int ag_ptx_marker_parse(const ag_ptx_module *m, const ag_ptx_stmt *s,
                        ag_diags *diags, ag_ptx_marker *mk);

/* The source position of statement s from the module's debug lines: the last
 * `.loc FILE LINE COL` before s in its function with a LINE above 0, and the
 * `.file FILE "PATH"` it names (Triton always writes them; nvcc with
 * -lineinfo). Returns 1 with *path (a span into the module's text, *plen
 * bytes, not NUL-terminated) and *line set, 0 when s has none. */
int ag_ptx_source_pos(const ag_ptx_module *m, const ag_ptx_stmt *s, const char **path,
                      size_t *plen, int *line);

typedef enum ag_ptx_site_kind {
  AG_PTX_SITE_TMA_LOAD,     /* cp.async.bulk.tensor global -> shared */
  AG_PTX_SITE_TMA_STORE,    /* cp.async.bulk.tensor shared -> global */
  AG_PTX_SITE_TMA_REDUCE,   /* cp.reduce.async.bulk.tensor */
  AG_PTX_SITE_TMA_PREFETCH, /* cp.async.bulk.prefetch.tensor */
  AG_PTX_SITE_BULK_COPY,    /* cp.async.bulk (non-tensor) / cp.reduce.async.bulk */
  AG_PTX_SITE_BULK_COMMIT,  /* cp.async.bulk.commit_group */
  AG_PTX_SITE_BULK_WAIT,    /* cp.async.bulk.wait_group[.read] N */
  AG_PTX_SITE_CP_ASYNC,     /* cp.async.ca/cg (non-bulk) */
  AG_PTX_SITE_CP_ASYNC_COMMIT, /* cp.async.commit_group */
  AG_PTX_SITE_CP_ASYNC_WAIT,   /* cp.async.wait_group N / wait_all */
  AG_PTX_SITE_CP_ASYNC_MBAR,   /* cp.async.mbarrier.arrive */
  AG_PTX_SITE_WGMMA,        /* wgmma.mma_async */
  AG_PTX_SITE_WGMMA_FENCE,  /* wgmma.fence */
  AG_PTX_SITE_WGMMA_COMMIT, /* wgmma.commit_group */
  AG_PTX_SITE_WGMMA_WAIT,   /* wgmma.wait_group N */
  AG_PTX_SITE_MBAR_INIT,    /* mbarrier.init */
  AG_PTX_SITE_MBAR_ARRIVE,  /* mbarrier.arrive / arrive_drop (incl. .expect_tx) */
  AG_PTX_SITE_MBAR_EXPECT_TX, /* mbarrier.expect_tx */
  AG_PTX_SITE_MBAR_WAIT,    /* mbarrier.try_wait / test_wait */
  AG_PTX_SITE_BARRIER,      /* bar.sync/bar.arrive/bar.red/barrier.*  */
  AG_PTX_SITE__COUNT
} ag_ptx_site_kind;

/* How the operation completes (what a probe must wait on). */
typedef enum ag_ptx_completion {
  AG_PTX_DONE_SYNC,        /* completes before the next instruction */
  AG_PTX_DONE_MBARRIER,    /* complete_tx on the mbarrier operand */
  AG_PTX_DONE_BULK_GROUP,  /* cp.async.bulk.commit_group / wait_group */
  AG_PTX_DONE_CP_GROUP,    /* cp.async.commit_group / wait_group */
  AG_PTX_DONE_WGMMA_GROUP, /* wgmma.commit_group / wait_group */
  AG_PTX_DONE_NONE,        /* a prefetch: nothing to wait for */
} ag_ptx_completion;

/* A barrier address resolved through the function's definitions:
 * `sym` + `offset` when `offset_known`, else sym + a run-time offset
 * (sym may be NULL when the base could not be traced to a variable). */
typedef struct ag_ptx_barref {
  const char *operand; /* the address operand as written: "[%r5+8]" */
  const char *reg;     /* its base register, or NULL */
  const char *sym;
  int64_t offset;
  int offset_known;
} ag_ptx_barref;

typedef struct ag_ptx_site {
  ag_ptx_site_kind kind;
  int region;           /* owning region (innermost open region) */
  uint64_t region_id;
  int ordinal;          /* 0-based position among the region's sites */
  char op_id[40];       /* "<region id hex>:<ordinal>" */
  ag_ptx_stmt *stmt;
  int line;
  ag_ptx_func *func;
  int loop;             /* innermost natural loop (cfg index), -1 */
  int loop_header_line; /* PTX line of that loop's header, 0 */
  int loop_depth;
  ag_ptx_completion completion;
  ag_ptx_barref bar;    /* mbarrier operand (TMA/bulk loads, mbarrier ops) */
  int has_bar;
  const char *parity;   /* try_wait/test_wait parity or phase operand */
  int group_n;          /* wait_group N (-1 when not a wait) */
  /* the group commit that closes this async op and the waits that complete
   * it (indices into ag_ptx_regions.sites), or the mbarrier waits on the same
   * barrier for an mbarrier-completed op */
  int *done_by;
  int ndone_by;
  /* a wait (kind *_WAIT): the span the reference times, recognized by what
   * it does (docs/probes.md, "The exposed wait"): the timed region begins
   * before wait_first and ends after wait_last; both NULL when the wait
   * cannot be timed, with the reason in wait_why. wait_shape names it. */
  ag_ptx_stmt *wait_first, *wait_last;
  const char *wait_shape;
  const char *wait_why;
  /* the iterations the site can execute at (its occurrence coordinate, the
   * probes' rule): iter_first + iter_step * m for m >= 0 (iter_step 0: only
   * iter_first) when iter_known, with how it was derived in iter_from;
   * otherwise any iteration may execute it (iter_from says why).
   * iter_line: the PTX line of the begin marker whose iteration operand is
   * the site's occurrence (the reaching one of its iteration region), 0
   * without one; a counting run of the reference tells from that marker's
   * records which iterations really ran (ag_probe_prune) */
  int iter_known;
  int64_t iter_first, iter_step;
  const char *iter_from;
  int iter_line;
} ag_ptx_site;

typedef struct ag_ptx_region_site {
  int line;         /* PTX line of the marker */
  const char *iter; /* iteration operand of a BEGIN_AT, or NULL */
  const char *role; /* begins: the nearest dominating role marker, or NULL */
} ag_ptx_region_site;

typedef struct ag_ptx_region {
  uint64_t id;
  const char *name;       /* local name ("loads"); kernel name for roots */
  const char *qname;      /* qualified: "gemm/mainloop/loads" */
  int parent;             /* index, -1 for a root */
  ag_ptx_func *func;
  int is_root;            /* the implicit region of a kernel / function */
  ag_ptx_region_site *begins, *ends;
  int nbegins, nends;
  const char *iter;       /* iteration register when all begins agree */
  const char *role;       /* warp role in effect (nearest dominating role
                             marker), NULL if none or mixed */
  int dynamic;            /* inside a .func called from several regions */
  int *owners;            /* regions whose code calls the .func */
  int nowners;
  int *children;
  int nchildren;
  int *sites;             /* sites directly in this region */
  int nsites;
} ag_ptx_region;

typedef struct ag_ptx_regions {
  ag_ptx_region *regions;
  int nregions;
  ag_ptx_site *sites;
  int nsites;
  ag_ptx_marker *markers;
  int nmarkers;
  ag_ptx_cfg **cfgs;      /* per function with a body, same order as m->funcs
                             (NULL for prototypes) */
  int **region_at;        /* per function as cfgs: the innermost open region
                             at each statement (by stmt->index; at a marker,
                             the region after it); NULL for prototypes */
} ag_ptx_regions;

/* Discovery over the whole module: builds each function's CFG, the region
 * table and hierarchy, validates the markers (errors name the region, the
 * function and the PTX line), and finds the sites. The result lives in m's
 * arena. Returns AG_EPARSE when validation fails (diagnostics say why). */
int ag_ptx_discover(ag_ptx_module *m, ag_diags *diags, ag_ptx_regions **out);

const char *ag_ptx_site_kind_name(ag_ptx_site_kind k); /* "tma_load" */
const char *ag_ptx_completion_name(ag_ptx_completion c); /* "mbarrier" */

/* A region path as the user wrote it, with its kernel part in a demangled
 * spelling ("gemm::sgemm<128, 128, 8, float>/loads", the full signature, or
 * "plain" for _Z5plainPf), rewritten with the mangled kernel name of one of
 * the module's kernels; other paths are copied. *out is owned. */
int ag_ptx_resolve_region(const ag_ptx_module *m, const char *query, char **out);

/* The region table with sites as JSON (new reference). */
json_t *ag_ptx_regions_to_json(const ag_ptx_module *m, const ag_ptx_regions *r);
/* The region tree as text, one region per line with its sites. */
int ag_ptx_regions_format(const ag_ptx_module *m, const ag_ptx_regions *r,
                          ag_str *out);
/* A function's CFG as text (blocks, edges, idom, loops). */
int ag_ptx_cfg_format(const ag_ptx_cfg *g, ag_str *out);
/* The same as JSON: {function, exit, blocks: [{id, lines: [first, last],
 * reachable, idom, loop, succ: [{to, kind: fall|branch|exit}]}], loops:
 * [{id, header, depth, parent, blocks}]} (the exit block has only its id).
 * New reference; NULL when out of memory. */
json_t *ag_ptx_cfg_to_json(const ag_ptx_cfg *g);

#ifdef __cplusplus
}
#endif
#endif
