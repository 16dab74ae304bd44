/*
 * run_int.h — what the files of src/tile/run share: the 16-bit float
 * conversions (round to nearest even, as the lowering's ag_f32_bf16), the
 * dtype table and the value of one tensor element.
 */
#ifndef ARGUS_TILE_RUN_INT_H
#define ARGUS_TILE_RUN_INT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The tile dtypes, in the order of the checker's and the lowering's tables
 * (interp.c, bind.c): DT_NONE for a name that is none. */
enum { DT_NONE, DT_BF16, DT_F16, DT_F32, DT_F64, DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32,
       DT_I64, DT_U64, DT_U128, DT_U256, DT_N };
static inline const char *ag__rdt_name(int dt) {
  static const char *const name[DT_N] = {"", "bf16", "f16", "f32", "f64", "i8", "u8", "i16",
                                         "u16", "i32", "u32", "i64", "u64", "u128", "u256"};
  return name[dt];
}
static inline int ag__rdt_size(int dt) {
  static const int size[DT_N] = {0, 2, 2, 4, 8, 1, 1, 2, 2, 4, 4, 8, 8, 16, 32};
  return size[dt];
}
static inline int ag__rdt_of(const char *n) {
  for (int i = 1; i < DT_N; i++)
    if (!strcmp(ag__rdt_name(i), n))
      return i;
  return DT_NONE;
}
/* the bytes of an element of the dtype named n (0: no such dtype) */
static inline int ag__rdt_bytes(const char *n) { return ag__rdt_size(ag__rdt_of(n)); }

static inline float ag__bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t ag__f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); /* a NaN stays a (quiet) NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float ag__h2f(uint16_t h) {
  uint32_t sign = h & 0x8000u, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
  float f = e == 0 ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 0x400u), (int)e - 25);
  return sign ? -f : f;
}
static inline uint16_t ag__f2h(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  float a = fabsf(f);
  if (a != a)
    return (uint16_t)(sign | 0x7e00u);
  if (a >= 65520.0f)
    return (uint16_t)(sign | 0x7c00u);
  if (a < ldexpf(1, -14)) /* subnormal: multiples of 2^-24 */
    return (uint16_t)(sign | (uint16_t)nearbyintf(a * 16777216.0f));
  int e;
  float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
  float q = nearbyintf(m * 2048.0f); /* 11 significant bits */
  if (q >= 2048.0f) {
    q /= 2;
    e++;
  }
  return (uint16_t)(sign | ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)q & 0x3ffu));
}

/* Element i of a buffer of dtype dt as a double (bind.c); integers exactly
 * up to 2^53, types wider than 8 bytes by their first 8. */
double ag__tile_elem_value(const char *dt, const void *buf, uint64_t i);

#endif
