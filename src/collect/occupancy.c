/*
 * occupancy.c — register occupancy buckets on Hopper (sm_90). A kernel's
 * registers per thread are allocated in units of 8 (256 per warp) from the
 * SM's 65,536; the SM holds at most 64 warps. Two register counts with the
 * same warps per SM give every block size the same CTAs per SM from
 * registers, so the traced variant keeps the trace-free build's occupancy
 * when its count stays within the trace-free count's bucket
 * (docs/tracing.md, "Perturbation"). Pure arithmetic; called per compile.
 */
#include "argus/collect.h"

#define REGS_PER_SM 65536
#define REG_UNIT 8 /* per thread: 256 per warp */
#define MAX_WARPS 64
#define MAX_REGS 255

int ag_occ_reg_warps(int registers) {
  if (registers < 1 || registers > MAX_REGS)
    return -1;
  int r = (registers + REG_UNIT - 1) / REG_UNIT * REG_UNIT;
  int w = REGS_PER_SM / (r * 32);
  return w < MAX_WARPS ? w : MAX_WARPS;
}

int ag_occ_reg_bucket_max(int registers) {
  int w = ag_occ_reg_warps(registers);
  if (w < 0)
    return -1;
  int hi = REGS_PER_SM / (w * 32) / REG_UNIT * REG_UNIT;
  return hi < MAX_REGS ? hi : MAX_REGS;
}
