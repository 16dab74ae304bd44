/*
 * argus/tile.h — the tile DSL's front end (src/tile/front): lexer, parser and
 * the abstract syntax tree of a tile program.
 *
 * The language is Python-like (indentation blocks, `def`, `for`, `if/else`,
 * assignments, expressions); docs/tile-dsl.md holds the full grammar. The
 * parser is purely syntactic: names, types, tiles and tags are given meaning
 * by the checker (argus/tile_check.h).
 *
 * Memory: a parsed program owns one arena; every node, string and list lives
 * in it and is freed by ag_tile_program_free. Malformed input never crashes
 * or hangs the parser: errors become diagnostics with file:line:col and the
 * source line (ag_diags), and nesting is bounded (AG_TILE_MAX_DEPTH).
 */
#ifndef ARGUS_TILE_H
#define ARGUS_TILE_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AG_TILE_MAX_DEPTH 200   /* nesting of expressions and blocks */
#define AG_TILE_MAX_ERRORS 20   /* the parser stops after this many */

/* Operators (binary, unary, comparison, augmented assignment). */
typedef enum ag_tile_op {
  AG_OP_NONE = 0,
  AG_OP_ADD, AG_OP_SUB, AG_OP_MUL, AG_OP_DIV, AG_OP_FLOORDIV, AG_OP_MOD,
  AG_OP_AND, AG_OP_OR, AG_OP_XOR, AG_OP_SHL, AG_OP_SHR,
  AG_OP_EQ, AG_OP_NE, AG_OP_LT, AG_OP_LE, AG_OP_GT, AG_OP_GE,
  AG_OP_NEG, AG_OP_POS, AG_OP_INV /* ~ */
} ag_tile_op;

const char *ag_tile_op_text(ag_tile_op op); /* "+", "//", "==", ... */

typedef enum ag_tile_kind {
  /* expressions */
  AG_TN_INT,     /* ival */
  AG_TN_FLOAT,   /* fval */
  AG_TN_STR,     /* name = the string's contents */
  AG_TN_BOOL,    /* ival = 0 or 1 */
  AG_TN_NAME,    /* name */
  AG_TN_BINOP,   /* op, a, b */
  AG_TN_UNOP,    /* op, a */
  AG_TN_CMP,     /* op, a, b (chains become AG_TN_LAND of comparisons) */
  AG_TN_LAND,    /* a and b */
  AG_TN_LOR,     /* a or b */
  AG_TN_LNOT,    /* not a */
  AG_TN_TERNARY, /* a if b else c */
  AG_TN_CALL,    /* a(list); keyword arguments are AG_TN_KWARG items */
  AG_TN_KWARG,   /* name = a */
  AG_TN_INDEX,   /* a[list]; slices are AG_TN_SLICE items */
  AG_TN_SLICE,   /* a:b, either may be NULL */
  AG_TN_ATTR,    /* a.name */
  AG_TN_TUPLE,   /* (list) */
  AG_TN_ARROW,   /* tag function: a -> b  (a is X[i, j], b the tag) */
  /* statements */
  AG_TN_ASSIGN,  /* list = targets, list2 = values; op != NONE for x op= y */
  AG_TN_EXPR,    /* a */
  AG_TN_FOR,     /* name = variable, a = iterable, list = body */
  AG_TN_IF,      /* a = condition, list = then, list2 = else (an elif is one AG_TN_IF) */
  AG_TN_ASSERT,  /* a = condition, b = optional message (AG_TN_STR) */
  AG_TN_ASSUME,  /* a = condition */
  AG_TN_PASS,
  /* declarations */
  AG_TN_PARAM,   /* name, a = type expression, b = default value or NULL */
  AG_TN_KERNEL,  /* name, list = params, list2 = body, a = decorators (an AG_TN_TUPLE of
                    AG_TN_CALL nodes, in source order) or NULL */
  AG_TN_REGION   /* region("name"): block — name = the region's name, list = body; the
                    body runs as if written in place (not a scope); the lowering marks it */
} ag_tile_kind;

typedef struct ag_tile_node ag_tile_node;
typedef struct ag_tile_list {
  ag_tile_node **v;
  int n;
} ag_tile_list;

struct ag_tile_node {
  ag_tile_kind kind;
  int line, col; /* 1-based position of the node's first token */
  ag_tile_op op;
  int64_t ival;
  double fval;
  const char *name;
  ag_tile_node *a, *b, *c;
  ag_tile_list list, list2;
};

/* A parsed file: module-level statements (constant assignments) and kernels,
 * in source order, in `top`. */
typedef struct ag_tile_program {
  ag_arena arena;
  char *file; /* arena copy of the file name shown in diagnostics */
  char *src;  /* arena copy of the source text (NUL-terminated) */
  size_t len;
  ag_tile_list top;
} ag_tile_program;

/* Parses src (len bytes; need not be NUL-terminated). file names the source
 * in diagnostics (may be NULL). Returns 0 with *out set (owned), AG_EPARSE
 * with diagnostics added and *out NULL, or AG_ENOMEM. */
int ag_tile_parse(const char *src, size_t len, const char *file, ag_diags *d,
                  ag_tile_program **out);
/* Reads and parses a file; AG_EIO (with a diagnostic) when it cannot be read. */
int ag_tile_parse_file(const char *path, ag_diags *d, ag_tile_program **out);
void ag_tile_program_free(ag_tile_program *p);

/* Prints a node (expression, statement or kernel) as canonical source:
 * parentheses only where precedence needs them, blocks indented by four
 * spaces. Printing a parsed program and parsing the text again gives the
 * same tree, never nested deeper than the source. */
int ag_tile_print(const ag_tile_node *n, int indent, ag_str *out);
int ag_tile_print_program(const ag_tile_program *p, ag_str *out);

/* Adds a diagnostic at node n's position, with the source line and caret. */
int ag_tile_diag(const ag_tile_program *p, ag_diags *d, ag_severity sev,
                 const ag_tile_node *n, const char *fmt, ...) AG_PRINTF(5, 6);
/* The source text of n's line (borrowed) and its length. */
const char *ag_tile_srcline(const ag_tile_program *p, int line, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
