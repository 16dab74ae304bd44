/*
 * argus/comm.h — the `comm` signal (docs/comm.md): NCCL's collectives read
 * off the system timeline's evidence (system.json, argus/system_ev.h) of a
 * run with the `api` kind on: per NCCL kernel (ncclDevKernel_* /
 * ncclKernel_*; NCCL's NVTX range names the operation of a generic kernel)
 * its operation, device, stream, start and duration (observed), its launch
 * overhead (the launch call's start to the kernel's start, one clock:
 * observed), the SMs it used (its CTAs: NCCL runs one CTA per channel on an
 * SM of its own), the bytes and ranks the harness declared in an NVTX range
 * ("argus.comm op=all_gather bytes=N ranks=R", enclosing the launch call),
 * the algorithm and bus bandwidths (nccl-tests' formulas: derived), and the
 * fraction of its duration that compute kernels of the same device ran
 * (derived: the join by time). Grouped per (operation, bytes, SMs).
 * Pure CPU; one pass per kernel over the run's kernels.
 */
#ifndef ARGUS_COMM_H
#define ARGUS_COMM_H

#include "argus/system_ev.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ag_comm_op {
  AG_COMM_NONE = -1,    /* not an NCCL kernel */
  AG_COMM_ALL_GATHER,
  AG_COMM_REDUCE_SCATTER,
  AG_COMM_ALL_REDUCE,
  AG_COMM_BROADCAST,
  AG_COMM_REDUCE,
  AG_COMM_SEND_RECV,
  AG_COMM_OTHER         /* an NCCL kernel whose operation its name does not say
                           (ncclDevKernel_Generic): NCCL's NVTX range may */
} ag_comm_op;

/* "all_gather", ...; NULL for AG_COMM_NONE. */
const char *ag_comm_op_name(ag_comm_op op);
/* The operation of a kernel name: ncclDevKernel_AllGather_RING_LL(...) and
 * ncclKernel_AllGather_RING_LL_Sum_int8_t(...) are AG_COMM_ALL_GATHER; an
 * nccl kernel of another token AG_COMM_OTHER; anything else AG_COMM_NONE. */
ag_comm_op ag_comm_op_of_kernel(const char *name);
/* The operation NCCL's own NVTX range names ("ncclAllGather" ...), or
 * AG_COMM_NONE. */
ag_comm_op ag_comm_op_of_range(const char *name);
/* An operation's snake-case name ("all_gather"), AG_COMM_NONE if none. */
ag_comm_op ag_comm_op_parse(const char *name);
/* nccl-tests' bus-bandwidth factor for n ranks: all_reduce 2(n-1)/n,
 * all_gather and reduce_scatter (n-1)/n, broadcast, reduce and send/recv
 * 1; 0 for n < 1 or AG_COMM_OTHER. */
double ag_comm_bus_factor(ag_comm_op op, int nranks);

/* A declaration range's name parsed: "argus.comm op=all_gather bytes=N
 * ranks=R" (keys in any order, op optional). 0: it is one (fields set,
 * op AG_COMM_NONE when absent); 1: the name is not a declaration; AG_EPARSE
 * with *why (a static-free message in why[0..n)) when it is one but bad. */
typedef struct ag_comm_decl {
  ag_comm_op op;
  uint64_t bytes;
  int ranks;
} ag_comm_decl;
int ag_comm_decl_parse(const char *name, ag_comm_decl *d, char *why, size_t n);

/* The `comm` signal (new reference) of evidence e:
 * {"signal":"comm","ops":[per NCCL kernel: "op","kernel","device","stream",
 * "corr","start_ns","duration_ns","launch_overhead_ns" (null: no launch
 * call in the evidence),"api","sms","bytes","ranks" (null: undeclared),
 * "algbw_GBps","busbw_GBps" (null: undeclared),"overlap" (0..1),
 * "overlapped_by" (compute kernel names),"nvtx" (NCCL's range)}],
 * "groups":[{"op","bytes","sms","count","duration_ns" {mean,min,max,total},
 * "launch_overhead_ns" (mean),"algbw_GBps","busbw_GBps","overlap" (mean),
 * "ranks"}],"compute_kernels","api_kind" (the evidence had launch calls),
 * "rules"}. Bad declarations: AG_EPARSE with a diagnostic in d naming the
 * range. AG_ENOMEM. */
int ag_comm_signal(const ag_sys_ev *e, ag_diags *d, json_t **out);
/* The synthesis output of signal `comm`: {"values","comm","warnings",
 * "missing"}; a run without an NCCL kernel is missing (with why), one
 * without launch calls or declarations has warnings. */
int ag_comm_synth(const ag_sys_ev *e, ag_diags *d, json_t **out);
/* The text: one line per group, then the rules. */
int ag_comm_text(const json_t *signal, ag_str *out);

#ifdef __cplusplus
}
#endif
#endif
