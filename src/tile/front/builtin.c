/*
 * builtin.c — the tile DSL's dtype table and builtin table (tile_builtin.h):
 * what the checker, the lowering and the value interpreter each need of a
 * type and of a builtin function on data, in one row.
 *
 * The scalar operations are the ones the lowered CUDA C calls (exp2f, not
 * ex2.approx; fmaxf, not a comparison), so the interpreter computes what the
 * GPU does up to the libraries' last-place differences (expf is 2 ulp on the
 * GPU).
 */
#include "../tile_builtin.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ dtypes */
static const struct {
  const char *name, *ctype;
  int size, is_float;
} dtinfo[DT_COUNT] = {
    [DT_NONE] = {"none", "", 0, 0},
    [DT_BF16] = {"bf16", "unsigned short", 2, 1},
    [DT_F16] = {"f16", "unsigned short", 2, 1},
    [DT_F32] = {"f32", "float", 4, 1},
    [DT_F64] = {"f64", "double", 8, 1},
    [DT_I8] = {"i8", "signed char", 1, 0},
    [DT_U8] = {"u8", "unsigned char", 1, 0},
    [DT_I16] = {"i16", "short", 2, 0},
    [DT_U16] = {"u16", "unsigned short", 2, 0},
    [DT_I32] = {"i32", "int", 4, 0},
    [DT_U32] = {"u32", "unsigned", 4, 0},
    [DT_I64] = {"i64", "long long", 8, 0},
    [DT_U64] = {"u64", "unsigned long long", 8, 0},
    [DT_U128] = {"u128", "ag_u128", 16, 0},
    [DT_U256] = {"u256", "ag_u256", 32, 0},
};
int ag__dt_size(ag__dt t) { return dtinfo[t].size; }
const char *ag__dt_name(ag__dt t) { return dtinfo[t].name; }
int ag__dt_is_float(ag__dt t) { return dtinfo[t].is_float; }
const char *ag__dt_ctype(ag__dt t) { return dtinfo[t].ctype; }
void ag__dt_int_range(ag__dt t, double *lo, double *hi, int *is_signed) {
  int bits = 8 * dtinfo[t].size;
  *is_signed = t == DT_I8 || t == DT_I16 || t == DT_I32 || t == DT_I64;
  *lo = *is_signed ? -ldexp(1, bits - 1) : 0;
  *hi = ldexp(1, *is_signed ? bits - 1 : bits);
}
ag__dt ag__dt_lookup(const char *name) {
  for (int i = 1; i < DT_COUNT; i++)
    if (strcmp(dtinfo[i].name, name) == 0)
      return (ag__dt)i;
  return DT_NONE;
}

/* ------------------------------------------------------- scalar operations */
static float f_exp2(float x, float y) { return (void)y, exp2f(x); }
static double d_exp2(double x, double y) { return (void)y, exp2(x); }
static float f_exp(float x, float y) { return (void)y, expf(x); }
static double d_exp(double x, double y) { return (void)y, exp(x); }
static float f_sqrt(float x, float y) { return (void)y, sqrtf(x); }
static double d_sqrt(double x, double y) { return (void)y, sqrt(x); }
static float f_rcp(float x, float y) { return (void)y, 1.0f / x; }
static double d_rcp(double x, double y) { return (void)y, 1.0 / x; }
static float f_abs(float x, float y) { return (void)y, fabsf(x); }
static double d_abs(double x, double y) { return (void)y, fabs(x); }
static float f_max(float x, float y) { return fmaxf(x, y); }
static double d_max(double x, double y) { return fmax(x, y); }
static int64_t i_max(int64_t x, int64_t y) { return x > y ? x : y; }
static float f_min(float x, float y) { return fminf(x, y); }
static double d_min(double x, double y) { return fmin(x, y); }
static int64_t i_min(int64_t x, int64_t y) { return x < y ? x : y; }

/* ----------------------------------------------------------------- the table */
#define UNARY(nm, f, d, cf, cd)                                                              \
  {.name = nm, .kind = AG__BI_MAP, .arity = 1, .f32 = f, .f64 = d, .cuda_f32 = cf,          \
   .cuda_f64 = cd}

static const ag__builtin table[] = {
    UNARY("exp2", f_exp2, d_exp2, "exp2f($0)", "exp2($0)"),
    UNARY("exp", f_exp, d_exp, "expf($0)", "exp($0)"),
    UNARY("sqrt", f_sqrt, d_sqrt, "sqrtf($0)", "sqrt($0)"),
    UNARY("rcp", f_rcp, d_rcp, "(1.0f / $0)", "(1.0 / $0)"),
    {.name = "abs", .kind = AG__BI_MAP, .arity = 1, .int_data = 1, .f32 = f_abs, .f64 = d_abs,
     .cuda_f32 = "fabsf($0)", .cuda_f64 = "fabs($0)", .cuda_int = "($0 < 0 ? -$0 : $0)"},
    {.name = "max", .kind = AG__BI_MAP, .arity = 2, .int_data = 1, .ints = i_max,
     .f32 = f_max, .f64 = d_max, .cuda_f32 = "fmaxf($0, $1)", .cuda_f64 = "fmax($0, $1)",
     .cuda_int = "($0 > $1 ? $0 : $1)"},
    {.name = "min", .kind = AG__BI_MAP, .arity = 2, .int_data = 1, .ints = i_min,
     .f32 = f_min, .f64 = d_min, .cuda_f32 = "fminf($0, $1)", .cuda_f64 = "fmin($0, $1)",
     .cuda_int = "($0 < $1 ? $0 : $1)"},
    {.name = "reduce_max", .kind = AG__BI_REDUCE, .arity = 1, .step = "max", .int_data = 1},
    {.name = "reduce_min", .kind = AG__BI_REDUCE, .arity = 1, .step = "min", .int_data = 1},
    {.name = "reduce_sum", .kind = AG__BI_REDUCE, .arity = 1, .int_data = 1},
    /* the lowering stores bf16 and f16 as 16-bit patterns and computes them in f32; a value
     * that goes f32 and back is the same bits, so the f32 template moves them exactly */
    {.name = "shfl_xor", .kind = AG__BI_LANE, .arity = 2, .int_data = 1,
     .cuda_f32 = "__shfl_xor_sync(0xffffffffu, $0, $1)",
     .cuda_f64 = "__shfl_xor_sync(0xffffffffu, $0, $1)",
     .cuda_int = "__shfl_xor_sync(0xffffffffu, $0, $1)"},
};

const ag__builtin *ag__builtin_lookup(const char *name) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}

const ag__builtin *ag__builtin_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}
