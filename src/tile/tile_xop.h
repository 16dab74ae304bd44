/*
 * tile_xop.h — the index-expression operator (layout.h) of a tile DSL binary
 * operator (tile.h), shared by the checker and the lowering; AG_X_CONST for
 * an operator that has none (comparisons, logic). And the folding of an
 * operator on two float constants, for the lowering and the interpreter.
 */
#ifndef ARGUS_TILE_XOP_H
#define ARGUS_TILE_XOP_H

#include "argus/layout.h"
#include "argus/tile.h"

static inline ag_expr_op ag_tile_xop(ag_tile_op op) {
  switch (op) {
  case AG_OP_ADD: return AG_X_ADD;
  case AG_OP_SUB: return AG_X_SUB;
  case AG_OP_MUL: return AG_X_MUL;
  case AG_OP_DIV:
  case AG_OP_FLOORDIV: return AG_X_DIV;
  case AG_OP_MOD: return AG_X_MOD;
  case AG_OP_AND: return AG_X_AND;
  case AG_OP_OR: return AG_X_OR;
  case AG_OP_XOR: return AG_X_XOR;
  case AG_OP_SHL: return AG_X_SHL;
  case AG_OP_SHR: return AG_X_SHR;
  default: return AG_X_CONST;
  }
}

/* A binary operator on two float constants, as the lowering and the value
 * interpreter fold it (the checker refuses arithmetic on constants only):
 * + - * / in double; *ok = 0 (and 0) for any other operator. */
static inline double ag_tile_fop(ag_tile_op op, double a, double b, int *ok) {
  *ok = 1;
  switch (op) {
  case AG_OP_ADD: return a + b;
  case AG_OP_SUB: return a - b;
  case AG_OP_MUL: return a * b;
  case AG_OP_DIV: return a / b;
  default: *ok = 0; return 0;
  }
}

#endif
