/*
 * ctr_default.h — the hardware counters' default metric set (docs/counters.md,
 * "The default set": why each is there) as an X-macro list, so the catalog
 * (ctr_catalog.c: ag_ctr_default) and the stand-in CUPTI of the CPU tests
 * (tests/sassm/fake_cupti_ctr.c) read the same names. Every name is on
 * GH100's list (test_counters checks it with CUPTI's host API).
 */
#ifndef ARGUS_COLLECT_CTR_DEFAULT_H
#define ARGUS_COLLECT_CTR_DEFAULT_H

#define AG_CTR_DEFAULT_METRICS(X)                                              \
  X("gpu__time_duration.sum")                                                  \
  X("sm__cycles_elapsed.avg.per_second")                                       \
  X("sm__throughput.avg.pct_of_peak_sustained_elapsed")                        \
  X("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")          \
  X("sm__inst_executed_pipe_tensor_op_gmma.sum")                               \
  X("dram__bytes_read.sum")                                                    \
  X("dram__bytes_write.sum")                                                   \
  X("dram__throughput.avg.pct_of_peak_sustained_elapsed")                      \
  X("lts__t_bytes.sum")                                                        \
  X("lts__t_sector_hit_rate.pct")                                              \
  X("l1tex__t_bytes.sum")                                                      \
  X("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")                          \
  X("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum")                      \
  X("sm__warps_active.avg.pct_of_peak_sustained_active")                       \
  X("smsp__issue_active.avg.pct_of_peak_sustained_active")                     \
  X("sm__inst_executed.sum")                                                   \
  X("sm__sass_thread_inst_executed_op_ffma_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_fadd_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_fmul_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_dfma_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_dadd_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_dmul_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_hfma_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_hadd_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_hmul_pred_on.sum")                       \
  X("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")        \
  X("dram__bytes.sum.peak_sustained")                                          \
  X("dram__cycles_elapsed.avg.per_second")                                     \
  X("sm__ops_path_tensor_op_hgmma_src_fp16.sum")                               \
  X("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum")                      \
  X("sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum")                      \
  X("sm__ops_path_tensor_src_fp8.sum")                                         \
  X("sm__ops_path_tensor_op_hgmma_src_fp16.sum.peak_sustained")                \
  X("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum.peak_sustained")       \
  X("sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum.peak_sustained")       \
  X("sm__ops_path_tensor_src_fp8.sum.peak_sustained")                          \
  X("gpc__cycles_elapsed.avg.per_second")

#endif
