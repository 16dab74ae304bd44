/*
 * argus/pm_metrics.h — the metrics PM sampling collects (docs/throughput.md),
 * one X-macro list that the collector (libargus_host, src/collect/pmsamp.c)
 * and the decoder (src/synth/pm_ev.c) both expand, so the names exist once.
 * No dependencies: the host runtime includes it.
 *
 * Each entry: X(index, CUPTI metric name, short name). All eight are GH100
 * names that CUPTI's profiler host API accepts for the PM sampler and
 * schedules in one pass (checked on the CPU by tests/hw/test_pm.c `metrics`
 * through cuptiProfilerHostInitialize("GH100"): 3,640-byte config image,
 * 1 pass). Every value is a count over one sampling window:
 *
 *   dram_read, dram_write  bytes read from / written to DRAM (all FBPAs)
 *   l2                     bytes requested from L2 (lts__t_bytes, all slices)
 *   sm_active              cycles with a warp in flight, mean over SMs
 *   sm_active_max          the same, the busiest SM (finds the one-thread
 *                          calibration kernels that align the sampler's clock)
 *   sm_elapsed             SM cycles elapsed, mean over SMs (the denominator
 *                          of the two cycle ratios)
 *   tensor                 cycles the tensor pipe was active, mean over SMs
 *   fma                    warp instructions the FMA pipes executed, all SMs
 *
 * (sm__inst_executed_pipe_fma.sum and sm__pipe_tensor_op_hmma_cycles_active
 * are not usable here: the first needs a second pass with the others, the
 * second is not a PM-sampling metric on GH100; the triage group's realtime
 * FMA counter is.)
 */
#ifndef ARGUS_PM_METRICS_H
#define ARGUS_PM_METRICS_H

#define AG_PM_METRICS(X)                                                                   \
  X(AG_PM_DRAM_READ, "dram__bytes_read.sum", "dram_read")                                  \
  X(AG_PM_DRAM_WRITE, "dram__bytes_write.sum", "dram_write")                               \
  X(AG_PM_L2, "lts__t_bytes.sum", "l2")                                                    \
  X(AG_PM_SM_ACTIVE, "sm__cycles_active.avg", "sm_active")                                 \
  X(AG_PM_SM_ACTIVE_MAX, "sm__cycles_active.max", "sm_active_max")                         \
  X(AG_PM_SM_ELAPSED, "sm__cycles_elapsed.avg", "sm_elapsed")                              \
  X(AG_PM_TENSOR, "sm__pipe_tensor_cycles_active_realtime.avg", "tensor")                  \
  X(AG_PM_FMA, "TPC.TriageCompute.sm__inst_executed_pipe_fma_realtime.sum", "fma")

#define AG__PM_ENUM(e, name, short_name) e,
enum { AG_PM_METRICS(AG__PM_ENUM) AG_PM_NMETRICS };
#undef AG__PM_ENUM

#endif
