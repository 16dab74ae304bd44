/*
 * test_occupancy.c — CTAs per SM on Hopper (src/synth/occupancy.c) against
 * values worked out by hand from the sm_90 limits and the rules of CUDA's
 * occupancy calculator, including the SGEMM (168 vs 179 registers
 * at 128 threads: 3 vs 2 CTAs) and examples/tma_probe's shared memory
 * (1,072 B static + 99,328 B dynamic: 2 CTAs), each limit in turn, and CTAs
 * that cannot fit.
 */
#include "check.h"

#include "argus/synth.h"

static ag_occupancy_result occ(int regs, unsigned threads, unsigned st, unsigned dyn) {
  ag_occupancy_result r;
  CHECK_EQ_INT(ag_occupancy(NULL, regs, threads, st, dyn, &r), 0);
  return r;
}

TEST(known_values) {
  static const struct {
    int regs;
    unsigned threads, st, dyn;
    int ctas;
    const char *limit;
  } k[] = {
      /* the SGEMM: 168 regs -> 5376/warp, 3 per sub-partition, 12 warps */
      {168, 128, 0, 0, 3, "registers"},
      /* 179 regs -> 5728 rounded to 5888, 2 per sub-partition: 8 warps */
      {179, 128, 0, 0, 2, "registers"},
      /* tma_probe: 1072 + 99328 + 1024 reserved = 101424 -> 101504; 233472 / 101504 */
      {64, 256, 1072, 99328, 2, "shared memory"},
      /* a tie (90 regs also allow 2): the first limit in the order registers,
       * then shared memory, is named */
      {90, 256, 1072, 99328, 2, "registers"},
      /* gemm_tma-like: 90 regs -> 3072/warp, 5 per sub-partition, 20 warps / 8 */
      {90, 256, 0, 0, 2, "registers"},
      /* threads: 32 regs, 1024 threads -> 2048 / 1024 */
      {32, 1024, 0, 0, 2, "threads"},
      /* CTAs: tiny blocks stop at 32 per SM */
      {16, 32, 0, 0, 32, "CTAs"},
      /* 0 registers (a kernel that needs none) is not a register limit */
      {0, 64, 0, 0, 32, "CTAs"},
      /* shared memory alone: 48 KB dynamic + 1 KB reserved = 50176 -> 4 */
      {32, 128, 0, 49152, 4, "shared memory"},
      /* 64 regs x 256 threads: 2048/warp, 8 per sub-partition, 32 warps / 8 = 4 */
      {64, 256, 0, 0, 4, "registers"},
      /* sub-partitions: 40 regs -> 1280/warp; 16384 / 1280 = 12 per sub-partition,
       * 48 warps, 24 CTAs of 2 warps (65536 / 1280 = 51 would give 25) */
      {40, 64, 0, 0, 24, "registers"},
      /* the allocation unit: 33 regs -> 1056 rounded to 1280/warp: 24 CTAs
       * (unrounded, 15 per sub-partition would give 30) */
      {33, 64, 0, 0, 24, "registers"},
      /* 255 regs, 32 threads: 8160 -> 8192/warp, 2 per sub-partition, 8 warps */
      {255, 32, 0, 0, 8, "registers"},
      /* the largest CTA shared memory: 227 KB + 1 KB reserved = one CTA */
      {32, 128, 0, 232448, 1, "shared memory"},
      /* cannot fit: too much shared memory, too many registers or threads */
      {32, 128, 0, 232449, 0, "shared memory"},
      {256, 32, 0, 0, 0, "registers"},
      {32, 1025, 0, 0, 0, "threads"},
      /* a CTA of 1024 threads at 65 registers needs more than 64K registers */
      {65, 1024, 0, 0, 0, "registers"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    ag_occupancy_result r = occ(k[i].regs, k[i].threads, k[i].st, k[i].dyn);
    if (r.ctas != k[i].ctas || strcmp(r.limit, k[i].limit))
      fprintf(stderr, "case %zu: %d regs %u threads %u+%u B: %d (%s), want %d (%s)\n", i,
              k[i].regs, k[i].threads, k[i].st, k[i].dyn, r.ctas, r.limit, k[i].ctas,
              k[i].limit);
    CHECK_EQ_INT(r.ctas, k[i].ctas);
    CHECK_EQ_STR(r.limit, k[i].limit);
  }
  ag_occupancy_result r = occ(168, 128, 0, 0);
  CHECK_EQ_INT(r.by_regs, 3);
  CHECK_EQ_INT(r.by_threads, 16);
  CHECK_EQ_INT(r.by_ctas, 32);
  CHECK_EQ_INT(r.warps_per_cta, 4);
  CHECK_EQ_INT((int)r.regs_per_cta, 5376 * 4);
  CHECK(r.occupancy > 0.187 && r.occupancy < 0.188); /* 12 of 64 warps */
  r = occ(64, 256, 1072, 99328);
  CHECK_EQ_INT((int)r.smem_per_cta, 101504);
  CHECK_EQ_INT(r.by_smem, 2);
}

TEST(bad_input) {
  ag_occupancy_result r;
  CHECK_EQ_INT(ag_occupancy(NULL, 32, 0, 0, 0, &r), AG_EINVAL);
  CHECK_EQ_INT(r.ctas, 0);
  CHECK_EQ_INT(ag_occupancy(NULL, -1, 32, 0, 0, &r), AG_EINVAL);
  /* explicit limits: a smaller SM */
  ag_sm_limits small = AG_SM90_LIMITS;
  small.smem_per_sm = 102400;
  CHECK_EQ_INT(ag_occupancy(&small, 32, 128, 0, 49152, &r), 0);
  CHECK_EQ_INT(r.ctas, 2);
}

RUN_TESTS(T(known_values), T(bad_input))
