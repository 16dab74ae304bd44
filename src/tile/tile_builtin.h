/*
 * tile_builtin.h — the tile DSL's data types and its builtin functions on
 * data (exp2, sqrt, max, reduce_sum, shfl_xor, ...), one table each, shared by the
 * checker (src/tile/check), the lowering (src/tile/lower) and the value
 * interpreter (src/tile/run), so the three cannot drift apart: adding a
 * builtin is one row of ag__builtins (src/tile/front/builtin.c), and
 * test_tile_builtins fails until the row is checked, lowered, compiled and
 * interpreted against a reference of its own.
 *
 * The tables are constant data; the functions look names up linearly (a
 * dozen rows, called once per call node).
 */
#ifndef ARGUS_TILE_BUILTIN_H
#define ARGUS_TILE_BUILTIN_H

#include <stdint.h>

/* ------------------------------------------------------------------ dtypes */
typedef enum ag__dt {
  DT_NONE = 0,
  DT_BF16, DT_F16, DT_F32, DT_F64,
  DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32, DT_I64, DT_U64,
  DT_U128, DT_U256,
  DT_COUNT
} ag__dt;
int ag__dt_size(ag__dt t);
const char *ag__dt_name(ag__dt t);
ag__dt ag__dt_lookup(const char *name);
int ag__dt_is_float(ag__dt t);
/* For an integer type: a float f with lo < f < hi truncates to a value of the
 * type (lo: the minimum, or 0; hi: the maximum + 1, a power of two, exact);
 * *is_signed gets whether the type is signed. */
void ag__dt_int_range(ag__dt t, double *lo, double *hi, int *is_signed);
/* The CUDA C type the lowering stores the type in (bf16 and f16 as their
 * 16-bit patterns: unsigned short). */
const char *ag__dt_ctype(ag__dt t);

/* -------------------------------------------------------------- builtins */
typedef enum {
  AG__BI_MAP,    /* element-wise on scalar data: the result has the operands' type */
  AG__BI_REDUCE, /* over a register tile, in its layout's index order: the element type */
  AG__BI_LANE,   /* a warp exchange: operand 0 is scalar data, operand 1 a compile-time lane
                  * mask in 0..31; lane l gets operand 0 of lane l ^ mask, bit for bit. Every
                  * lane of the warp takes part (a full-mask shfl.sync.bfly): refused under a
                  * branch that may split a warp, and in a block that is not whole warps. */
} ag__bikind;

typedef struct ag__builtin {
  const char *name; /* the DSL name */
  ag__bikind kind;
  int arity;        /* MAP: data operands of one type (constants take it); REDUCE: 1 tile;
                     * LANE: 2 (the data, the lane mask) */
  const char *step; /* REDUCE: the MAP row that combines two elements; NULL: addition */
  /* Operand kinds. Floating-point data always (bf16 and f16 computed in f32 and rounded to
   * the type after each operation, as the lowering does); integer data when int_data (C's
   * integer semantics, as the lowering emits them); two integers when ints is set: folded
   * at compile time by the checker and the lowering, per thread by the interpreter. */
  int int_data;
  int64_t (*ints)(int64_t x, int64_t y);
  float (*f32)(float x, float y);    /* the scalar operation (y unused when unary) */
  double (*f64)(double x, double y);
  /* CUDA C of the lowering: f32 (bf16, f16 and f32, in f32), f64, integers (NULL when not
   * int_data); $0 and $1 stand for the operands' C expressions (LANE: $1 is the mask). */
  const char *cuda_f32, *cuda_f64, *cuda_int;
} ag__builtin;

/* The row named name, or NULL (borrowed: static data). */
const ag__builtin *ag__builtin_lookup(const char *name);
/* Every row; *n gets their count. */
const ag__builtin *ag__builtin_table(int *n);

#endif
