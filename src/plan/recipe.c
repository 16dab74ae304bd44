/*
 * recipe.c — the recipe table: each signal names the evidence it needs and
 * its synthesis rule; each evidence kind names its program variant, collect
 * backend, prerequisite analysis, retained scope coordinates and collection
 * effects. Later issues add rows here, not code paths in the planner.
 */
#include "argus/plan.h"

#include <string.h>

#define ALL_SCOPE                                                              \
  ((1u << AG_SCOPE_ITER) | (1u << AG_SCOPE_SM) | (1u << AG_SCOPE_CTA) |        \
   (1u << AG_SCOPE_WARP) | (1u << AG_SCOPE_LAUNCH))

static const ag_evidence_kind evidence_kinds[] = {
    /* region tracing: probes at the markers of the selected regions */
    {"trace", "traced", "trace", "discover", ALL_SCOPE, AG_EFF_PERTURBS_TIMING, 0, NULL,
     "kernel_time", NULL},
    /* the trace-free build's kernel time and occupancy, every launch timed,
     * in a run of its own: the baseline of every trace */
    {"kernel_time", "trace-free", "time", "discover", 1u << AG_SCOPE_LAUNCH, 0, 0, NULL, NULL,
     NULL},
    /* the compiler's resource report for the unmodified module */
    {"compile_log", "trace-free", NULL, "discover", 0, 0, 0, NULL, NULL, NULL},
    /* async_latency's observed baseline: a reference trace whose variant also
     * times every wait that completes an async operation (docs/probes.md) */
    {"async_ref", "traced", "trace", "discover", ALL_SCOPE, AG_EFF_PERTURBS_TIMING, 0,
     "{\"waits\":true}", NULL, NULL},
    /* one forced-completion probe per (async site, iteration): its own run */
    {"async_probe", "probe", "trace", "discover", ALL_SCOPE, AG_EFF_FORCES_COMPLETION, 1, NULL,
     NULL, NULL},
    /* the trace-free build compiled with -lineinfo: the same SASS, with the
     * SASS -> PTX line table that maps PCs to the mapping run's blocks */
    {"lineinfo", "trace-free", NULL, "discover", 0, 0, 0, NULL, NULL, "{\"lineinfo\":true}"},
    /* the mapping run: executions per (basic block, current region), summed
     * over every launch and warp (docs/attribution.md); its own variant, so
     * its own run, apart from every timing collection */
    {"map_counts", "mapping", "map", "discover", 0, AG_EFF_PERTURBS_TIMING, 0, NULL, NULL,
     NULL},
    /* CUPTI SASS metrics per PC of the line-info build; CUPTI patches the
     * kernel, so the run is alone and in a process of its own */
    {"sass_metrics", "trace-free", "sass", "discover", 0, AG_EFF_PATCHES_SASS, 0, NULL, NULL,
     "{\"lineinfo\":true}"},
    /* CUPTI PC sampling of the line-info build (docs/stalls.md): a CUPTI
     * subscriber of its own, so a run of its own */
    {"stalls", "trace-free", "stalls", "discover", 0, AG_EFF_PERTURBS_TIMING, 0, NULL, NULL,
     "{\"lineinfo\":true}"},
    /* the system timeline: CUPTI activity beside the timing run of the
     * user's build; its transform config keeps it out of the trace-free
     * timing run, whose kernel times it would move (docs/system.md) */
    {.name = "system", .variant = "trace-free", .backend = "system", .prereq = "discover",
     .retained_scope = 1u << AG_SCOPE_LAUNCH, .effects = AG_EFF_PERTURBS_TIMING,
     .transform = "{\"activity\":true}"},
    /* the system timeline with the launch calls (the `api` kind) beside it,
     * the harness seeing every GPU (NCCL's communicator spans them): the
     * comm signal's evidence (docs/comm.md); its own run, as `system` */
    {.name = "comm", .variant = "trace-free", .backend = "system", .prereq = "discover",
     .retained_scope = 1u << AG_SCOPE_LAUNCH, .effects = AG_EFF_PERTURBS_TIMING,
     .transform = "{\"activity\":true,\"api\":true}"},
    /* PM sampling (docs/throughput.md): hardware counters per window beside
     * the timing run of the user's build, in a run of its own (its
     * transform config): not the trace-free timing run, whose kernel times
     * the activity trace beside the sampler would move; never with SASS
     * patching (exclusive), and not the traced run, whose probes would add
     * their stores to the DRAM counts */
    {.name = "pm", .variant = "trace-free", .backend = "pm", .prereq = "discover",
     .retained_scope = 1u << AG_SCOPE_LAUNCH, .effects = AG_EFF_PERTURBS_TIMING,
     .transform = "{\"pm\":true}"},
    /* hardware counters: CUPTI's range profiler on the user's build; kernel
     * replay runs each launch once per pass, one at a time, so nothing else
     * shares the run (docs/counters.md) */
    {.name = "counters", .variant = "trace-free", .backend = "counters", .prereq = "discover",
     .retained_scope = 1u << AG_SCOPE_LAUNCH, .effects = AG_EFF_SERIALIZES_KERNELS},
};

static const ag_recipe recipes[] = {
    {"duration", "trace", "synth.duration", AG_QUAL_OBSERVED, "ns",
     "time per region occurrence: count, total, mean, p50, p95, min, max; by SM and role", NULL, 0},
    {"occurrences", "trace", "synth.occurrences", AG_QUAL_OBSERVED, "count",
     "how many times each region ran in the scope, and which occurrences were dropped", NULL, 0},
    {"timeline", "trace", "synth.timeline", AG_QUAL_OBSERVED, "chrome-trace",
     "Chrome-trace JSON of every occurrence, a track per SM and warp (opens in Perfetto)", NULL, 0},
    {"static", "compile_log", "synth.static", AG_QUAL_OBSERVED, "",
     "registers, spills, shared memory and stack from the compiler's report", NULL, 0},
    {"async_latency", "async_probe", "synth.async_latency", AG_QUAL_DERIVED, "ns",
     "per async site and iteration: issue-to-completion latency (derived, forced-completion "
     "probe), the consumer's exposed wait (observed) and the hidden part (derived)",
     "async_ref", 0},
    {"ownership", "map_counts", "synth.ownership", AG_QUAL_ATTRIBUTED, "count",
     "the PC-to-region map: per region its PCs, the PCs it shares with other regions, and the "
     "warp instructions the mapping run counted",
     "lineinfo", 0},
    {"inst_mix", "sass_metrics", "synth.inst_mix", AG_QUAL_ATTRIBUTED, "warp-inst",
     "executed warp instructions per region by class (tensor, memory, barrier, control, "
     "integer, fp32, ...): CUPTI SASS metrics attributed through the map, with entropy; "
     "without them, derived from the map alone (warp instructions executed)",
     "map_counts", 1},
    {"barriers", "sass_metrics", "synth.barriers", AG_QUAL_ATTRIBUTED, "warp-inst",
     "executed barrier and fence instructions per region (BAR, SYNCS/mbarrier, MEMBAR, "
     "WARPSYNC), attributed through the map; without SASS metrics, derived from the map",
     "map_counts", 1},
    {"branch", "sass_metrics", "synth.branch", AG_QUAL_ATTRIBUTED, "ratio",
     "per region branch efficiency: thread instructions / (32 x warp instructions), "
     "numerator and denominator attributed apart; and the predicated-on share",
     "map_counts", 0},
    {"stalls", "stalls", "synth.stalls", AG_QUAL_ATTRIBUTED, "samples",
     "per region PC samples by stall reason (CUPTI PC sampling attributed through the map): "
     "samples, share of the kernel's, top reason, reason entropy, top PCs with opcode and "
     "PTX line",
     "map_counts", 0},
    {.signal = "system", .evidence = "system", .synth = "synth.system",
     .qual = AG_QUAL_OBSERVED, .unit = "ns",
     .summary = "the system timeline per launch (kernel, grid, block, registers, shared "
                "memory, stream, correlation ID, start, duration) and per stream (kernels, "
                "copies, sets, synchronizations, busy time), on the %globaltimer clock"},
    {.signal = "comm", .evidence = "comm", .synth = "synth.comm", .qual = AG_QUAL_DERIVED,
     .unit = "ns",
     .summary = "per NCCL collective (all-gather, reduce-scatter, all-reduce): count, launch "
                "overhead, duration, SMs (observed); declared bytes, algorithm and bus "
                "bandwidth, overlap with the compute kernels of the same run (derived)"},
    {.signal = "throughput", .evidence = "pm", .synth = "synth.throughput",
     .qual = AG_QUAL_DERIVED, .unit = "GB/s",
     .summary = "per region the DRAM read and write, L2, SM-active, tensor-pipe and FMA rates "
                "of the PM-sampling windows the region covered at least 80 % of (the "
                "reference trace's timeline joined with the samples)",
     .reference = "trace"},
    {.signal = "hw_counters", .evidence = "counters", .synth = "synth.hw_counters",
     .qual = AG_QUAL_OBSERVED, .unit = "metric",
     .summary = "hardware counters per kernel launch (or harness range): SM and DRAM "
                "throughput, tensor pipe, DRAM/L2/L1 bytes, shared-memory bank conflicts, "
                "achieved occupancy, issue slots, FLOPs, and the roofline position against "
                "the device's peaks; --metrics adds any metric of the chip"},
};

static const ag_recipe_table builtin = {recipes, sizeof recipes / sizeof recipes[0],
                                        evidence_kinds,
                                        sizeof evidence_kinds / sizeof evidence_kinds[0]};

const ag_recipe_table *ag_recipe_builtin(void) { return &builtin; }

const ag_recipe *ag_recipe_table_find(const ag_recipe_table *t, const char *signal) {
  for (size_t i = 0; signal && i < t->nrecipes; i++)
    if (!strcmp(t->recipes[i].signal, signal))
      return &t->recipes[i];
  return NULL;
}

const ag_evidence_kind *ag_evidence_table_find(const ag_recipe_table *t, const char *name) {
  for (size_t i = 0; name && i < t->nkinds; i++)
    if (!strcmp(t->kinds[i].name, name))
      return &t->kinds[i];
  return NULL;
}

const ag_recipe *ag_recipe_find(const char *signal) {
  return ag_recipe_table_find(&builtin, signal);
}

const ag_recipe *ag_recipe_at(size_t i) { return i < builtin.nrecipes ? &recipes[i] : NULL; }

const ag_evidence_kind *ag_evidence_find(const char *name) {
  return ag_evidence_table_find(&builtin, name);
}

const char *ag_qual_name(ag_qual q) {
  return q == AG_QUAL_OBSERVED ? "observed" : q == AG_QUAL_ATTRIBUTED ? "attributed" : "derived";
}

/* Timing instrumentation may share a run with other timing instrumentation
 * of the same variant; anything that forces completion, patches SASS or
 * serializes kernels changes what the others would measure, so it runs
 * alone. */
int ag_effects_conflict(unsigned a, unsigned b) {
  const unsigned exclusive =
      AG_EFF_FORCES_COMPLETION | AG_EFF_PATCHES_SASS | AG_EFF_SERIALIZES_KERNELS;
  return ((a | b) & exclusive) != 0;
}

int ag_effects_format(unsigned e, ag_str *out) {
  static const char *const names[] = {"perturbs_timing", "forces_completion", "patches_sass",
                                      "serializes_kernels"};
  int first = 1;
  for (int i = 0; i < 4; i++)
    if (e & (1u << i)) {
      ag_str_printf(out, "%s%s", first ? "" : "|", names[i]);
      first = 0;
    }
  if (first)
    ag_str_puts(out, "none");
  return out->oom ? AG_ENOMEM : 0;
}
