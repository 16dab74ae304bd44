/*
 * occupancy.c — how many CTAs of a kernel fit on one SM, from its registers
 * per thread, threads per CTA, and static plus dynamic shared memory, with
 * the Hopper (sm_90: H100, H200) limits: 64K registers per SM in 4
 * sub-partitions, allocated per warp in units of 256; 2048 threads (64
 * warps), 32 CTAs, 228 KB of shared memory per SM, at most 227 KB per CTA,
 * 1 KB reserved per CTA by the system, allocated in units of 128 bytes.
 * This follows the rules of CUDA's occupancy calculator (a warp's
 * registers live in one sub-partition, so each holds floor(16384 / regs per
 * warp) warps), with the largest shared-memory carveout. The host runtime
 * records the driver's own figure (cuOccupancyMaxActiveBlocksPerMultiprocessor)
 * for the launches it records, and the report shows both. A few integer
 * operations per launch.
 */
#include "argus/synth.h"

const ag_sm_limits AG_SM90_LIMITS = {
    .regs_per_sm = 65536,
    .regs_per_cta = 65536,
    .max_regs_per_thread = 255,
    .reg_unit = 256,
    .subpartitions = 4,
    .max_threads_per_sm = 2048,
    .max_threads_per_cta = 1024,
    .max_ctas_per_sm = 32,
    .smem_per_sm = 233472,  /* 228 KB */
    .smem_per_cta = 232448, /* 227 KB */
    .smem_reserved_per_cta = 1024,
    .smem_unit = 128,
};

static unsigned long round_up(unsigned long x, unsigned long u) { return (x + u - 1) / u * u; }

int ag_occupancy(const ag_sm_limits *lim, int regs, unsigned threads, unsigned static_smem,
                 unsigned dynamic_smem, ag_occupancy_result *out) {
  ag_occupancy_result r = {0};
  *out = r;
  if (!lim)
    lim = &AG_SM90_LIMITS;
  if (regs < 0 || threads == 0)
    return AG_EINVAL;
  unsigned long warps = (threads + 31) / 32;
  r.warps_per_cta = (int)warps;
  /* threads and CTAs */
  r.by_threads = threads > (unsigned)lim->max_threads_per_cta
                     ? 0
                     : (int)((unsigned long)lim->max_threads_per_sm / 32 / warps);
  r.by_ctas = lim->max_ctas_per_sm;
  /* registers: per warp, rounded to the unit, in one sub-partition */
  unsigned long rpw = round_up((unsigned long)regs * 32, (unsigned long)lim->reg_unit);
  r.regs_per_cta = (long)(rpw * warps);
  if (regs > lim->max_regs_per_thread ||
      rpw * round_up(warps, (unsigned long)lim->subpartitions) > (unsigned long)lim->regs_per_cta)
    r.by_regs = 0;
  else if (rpw == 0)
    r.by_regs = r.by_ctas;
  else
    r.by_regs = (int)((unsigned long)lim->regs_per_sm / (unsigned long)lim->subpartitions / rpw *
                      (unsigned long)lim->subpartitions / warps);
  /* shared memory: static + dynamic + the reserved KB, rounded to the unit */
  unsigned long smem = round_up((unsigned long)static_smem + dynamic_smem +
                                    (unsigned long)lim->smem_reserved_per_cta,
                                (unsigned long)lim->smem_unit);
  r.smem_per_cta = (long)smem;
  r.by_smem = smem > (unsigned long)lim->smem_per_cta + (unsigned long)lim->smem_reserved_per_cta
                  ? 0
                  : (int)((unsigned long)lim->smem_per_sm / smem);
  /* the least of them, and which one it is */
  r.ctas = r.by_ctas;
  r.limit = "CTAs";
  if (r.by_threads < r.ctas)
    r.ctas = r.by_threads, r.limit = "threads";
  if (r.by_regs < r.ctas)
    r.ctas = r.by_regs, r.limit = "registers";
  if (r.by_smem < r.ctas)
    r.ctas = r.by_smem, r.limit = "shared memory";
  r.occupancy = (double)r.ctas * (double)warps / (double)(lim->max_threads_per_sm / 32);
  *out = r;
  return 0;
}
