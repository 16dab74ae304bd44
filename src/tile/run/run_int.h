/*
 * run_int.h — what the files of src/tile/run share: the 16-bit float
 * conversions (round to nearest even, as the lowering's ag_f32_bf16), the
 * dtype table and the value of one tensor element.
 */
#ifndef ARGUS_TILE_RUN_INT_H
#define ARGUS_TILE_RUN_INT_H

#include <math.h>
#include "../check/check_int.h"

#include <stdint.h>
#include <string.h>

/* The tile dtypes are the checker's (ag__dt: ag__dt_size, ag__dt_name,
 * ag__dt_lookup, ag__dt_is_float; src/tile/check/check_int.h). */
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
double ag__tile_elem_value(ag__dt dt, const void *buf, uint64_t i);

#endif
