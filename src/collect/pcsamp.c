/*
 * pcsamp.c — the CUPTI PC-sampling collector (pcsamp.h, docs/stalls.md).
 * The SM samples one warp per scheduler every 2^k cycles and records its PC
 * and why it is not issuing (its stall reason); CUPTI's worker threads read
 * the hardware buffer and aggregate the samples per (cubin CRC, function,
 * pcOffset, reason). The collector configures every reason the chip lists,
 * samples inside one start/stop range around the variant's launches
 * (continuous mode: kernels are not serialized), and after the range reads
 * CUPTI's records with cuptiPCSamplingGetData until none remain, then the
 * rest from the configuration buffer at disable. Samples go into the same
 * row table as SASS metrics (an offline ag_sassm, one column per reason),
 * so the evidence has their format and the opcodes come from the same
 * disassembly. Dropped samples (hardware backpressure), samples of other
 * kernels and a full hardware buffer are counted per buffer read and
 * reported.
 *
 * Load: one collection per harness run; a buffer read is O(PCs x reasons).
 */
#define _GNU_SOURCE
#include "pcsamp.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"
#include "cupti_lib.h"
#include "sass_metrics.h"

#define AG_PCS_FUNCS(X)                                                        \
  X(cuptiGetResultString)                                                      \
  X(cuptiGetVersion)                                                           \
  X(cuptiSubscribe)                                                            \
  X(cuptiUnsubscribe)                                                          \
  X(cuptiPCSamplingEnable)                                                     \
  X(cuptiPCSamplingDisable)                                                    \
  X(cuptiPCSamplingStart)                                                      \
  X(cuptiPCSamplingStop)                                                       \
  X(cuptiPCSamplingGetData)                                                    \
  X(cuptiPCSamplingGetNumStallReasons)                                         \
  X(cuptiPCSamplingGetStallReasons)                                            \
  X(cuptiPCSamplingSetConfigurationAttribute)                                  \
  X(cuptiGetCubinCrc)

#define PCS_BUF_PCS 8192 /* PC records per buffer read */
#define PCS_MAX_READS 64

typedef struct pcs_read {
  const char *from; /* "get_data" or "disable" */
  uint64_t total, dropped, non_user, pcs;
  int hw_full, oom; /* hardwareBufferFull; the read returned CUPTI_ERROR_OUT_OF_MEMORY */
} pcs_read;

typedef struct pcs_buf {
  CUpti_PCSamplingData d;
  CUpti_PCSamplingPCData *pc;
  CUpti_PCSamplingStallReason *sr;
} pcs_buf;

struct ag_pcs {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_PCS_FUNCS(AG__FP)
#undef AG__FP
  CUcontext ctx;
  uint32_t version;
  CUpti_SubscriberHandle sub;
  int subscribed, enabled, started;
  uint32_t period;      /* log2 of the cycles */
  size_t nreasons;      /* the chip's */
  uint32_t *reason_idx;
  char **reason_names;
  size_t ncollected;    /* configured (at most AG_SASSM_MAX_METRICS) */
  pcs_buf cfg, rd;      /* the configuration buffer, the read buffer */
  pcs_read reads[PCS_MAX_READS];
  int nreads, reads_lost;
  uint32_t ranges;
  ag_sassm *rows;       /* offline: one column per stall reason */
};

static int load(ag_pcs *p, char *err, size_t errlen) {
  if (!(p->lib = ag__cupti_lib("PC sampling", err, errlen)))
    return AG_HOST_ENODEV;
#define AG__LOAD(fn)                                                           \
  *(void **)(&p->fn) = dlsym(p->lib, #fn);                                     \
  if (!p->fn) {                                                                \
    ag__cupti_lacks("PC sampling", #fn, err, errlen);                          \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_PCS_FUNCS(AG__LOAD)
#undef AG__LOAD
  return 0;
}

static int buf_init(pcs_buf *b, size_t nreasons) {
  b->pc = calloc(PCS_BUF_PCS, sizeof *b->pc);
  b->sr = calloc((size_t)PCS_BUF_PCS * (nreasons ? nreasons : 1), sizeof *b->sr);
  if (!b->pc || !b->sr)
    return AG_HOST_ENOMEM;
  for (size_t i = 0; i < PCS_BUF_PCS; i++) {
    b->pc[i].size = sizeof *b->pc;
    b->pc[i].stallReason = &b->sr[i * nreasons];
  }
  memset(&b->d, 0, sizeof b->d);
  b->d.size = sizeof b->d;
  b->d.collectNumPcs = PCS_BUF_PCS;
  b->d.pPcData = b->pc;
  return 0;
}

static int reasons(ag_pcs *p, char *err, size_t errlen) {
  CUpti_PCSamplingGetNumStallReasonsParams np = {.size = CUpti_PCSamplingGetNumStallReasonsParamsSize};
  np.ctx = p->ctx;
  np.numStallReasons = &p->nreasons;
  AG__CP(p, cuptiPCSamplingGetNumStallReasons(&np));
  if (!p->nreasons || p->nreasons > 4096) {
    ag__seterr(err, errlen, "PC sampling: CUPTI lists %zu stall reasons for this device",
               p->nreasons);
    return AG_HOST_EUNSUPPORTED;
  }
  p->reason_idx = calloc(p->nreasons, sizeof *p->reason_idx);
  p->reason_names = calloc(p->nreasons, sizeof *p->reason_names);
  if (!p->reason_idx || !p->reason_names)
    return AG_HOST_ENOMEM;
  for (size_t i = 0; i < p->nreasons; i++)
    if (!(p->reason_names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)))
      return AG_HOST_ENOMEM;
  CUpti_PCSamplingGetStallReasonsParams sp = {.size = CUpti_PCSamplingGetStallReasonsParamsSize};
  sp.ctx = p->ctx;
  sp.numStallReasons = p->nreasons;
  sp.stallReasonIndex = p->reason_idx;
  sp.stallReasons = p->reason_names;
  AG__CP(p, cuptiPCSamplingGetStallReasons(&sp));
  p->ncollected = p->nreasons < AG_SASSM_MAX_METRICS ? p->nreasons : AG_SASSM_MAX_METRICS;
  for (size_t i = 0; i < p->ncollected; i++)
    if (ag_sassm_offline_metric(p->rows, p->reason_names[i], p->reason_idx[i]))
      return AG_HOST_ENOMEM;
  return 0;
}

static int configure(ag_pcs *p, char *err, size_t errlen) {
  CUpti_PCSamplingConfigurationInfo c[8];
  memset(c, 0, sizeof c);
  int n = 0;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  c[n++].attributeData.samplingPeriodData.samplingPeriod = p->period;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  c[n].attributeData.stallReasonData.stallReasonCount = p->ncollected;
  c[n++].attributeData.stallReasonData.pStallReasonIndex = p->reason_idx;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  c[n++].attributeData.scratchBufferSizeData.scratchBufferSize = (size_t)64 << 20;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  c[n++].attributeData.hardwareBufferSizeData.hardwareBufferSize = (size_t)512 << 20;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  c[n++].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  c[n++].attributeData.enableStartStopControlData.enableStartStopControl = 1;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  c[n++].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  c[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  c[n++].attributeData.samplingDataBufferData.samplingDataBuffer = &p->cfg.d;
  CUpti_PCSamplingConfigurationInfoParams cp = {.size = CUpti_PCSamplingConfigurationInfoParamsSize};
  cp.ctx = p->ctx;
  cp.numAttributes = (size_t)n;
  cp.pPCSamplingConfigurationInfo = c;
  CUptiResult r = p->cuptiPCSamplingSetConfigurationAttribute(&cp);
  if (r != CUPTI_SUCCESS) {
    for (int i = 0; i < n; i++)
      if (c[i].attributeStatus != CUPTI_SUCCESS) {
        char call[120];
        snprintf(call, sizeof call, "cuptiPCSamplingSetConfigurationAttribute(attribute %d)",
                 (int)c[i].attributeType);
        return AG__CUPTI_FAIL(p, c[i].attributeStatus, call, err, errlen);
      }
    return AG__CUPTI_FAIL(p, r, "cuptiPCSamplingSetConfigurationAttribute", err, errlen);
  }
  return 0;
}

int ag_pcs_open(void *ctx, ag_pcs **out, char *err, size_t errlen) {
  *out = NULL;
  ag_pcs *p = calloc(1, sizeof *p);
  int rc = 0;
  if (!p || !(p->rows = ag_sassm_new_offline())) {
    free(p);
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  p->ctx = (CUcontext)ctx;
  p->period = AG_PCS_DEFAULT_PERIOD;
  const char *pe = getenv("ARGUS_STALLS_PERIOD");
  if (pe && *pe) {
    char *end = NULL;
    long k = strtol(pe, &end, 10);
    if (!end || *end || k < 5 || k > 31) {
      ag__seterr(err, errlen,
                 "ARGUS_STALLS_PERIOD='%s' is not a whole number in [5, 31] (the sampling "
                 "period is 2^k cycles)", pe);
      rc = AG_HOST_EINVAL;
      goto out;
    }
    p->period = (uint32_t)k;
  }
  void *h = NULL;
  if ((rc = load(p, err, errlen)))
    goto out;
  rc = ag__cupti_subscribe((void *)p->cuptiSubscribe, &h, "PC sampling", err, errlen);
  p->sub = h;
  if (rc)
    goto out;
  p->subscribed = 1;
  p->cuptiGetVersion(&p->version);
  CUpti_PCSamplingEnableParams en = {.size = CUpti_PCSamplingEnableParamsSize};
  en.ctx = p->ctx;
  CUptiResult r = p->cuptiPCSamplingEnable(&en);
  if (r != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(p, r, "cuptiPCSamplingEnable", err, errlen);
    goto out;
  }
  p->enabled = 1;
  if ((rc = reasons(p, err, errlen)) || (rc = buf_init(&p->cfg, p->ncollected)) ||
      (rc = buf_init(&p->rd, p->ncollected)) || (rc = configure(p, err, errlen))) {
    if (rc == AG_HOST_ENOMEM)
      ag__seterr(err, errlen, "out of memory for PC sampling's buffers");
    goto out;
  }
  *out = p;
out:
  if (rc)
    ag_pcs_close(p);
  return rc;
}

int ag_pcs_cubin(ag_pcs *p, const void *image, size_t bytes, char *err, size_t errlen) {
  CUpti_GetCubinCrcParams cc = {.size = CUpti_GetCubinCrcParamsSize};
  cc.cubin = image;
  cc.cubinSize = bytes;
  AG__CP(p, cuptiGetCubinCrc(&cc));
  if (ag_sassm_offline_cubin(p->rows, cc.cubinCrc, bytes)) {
    ag__seterr(err, errlen, "too many cubins for one PC-sampling collection (at most 16)");
    return AG_HOST_EINVAL;
  }
  return 0;
}

int ag_pcs_begin(ag_pcs *p, char *err, size_t errlen) {
  if (p->started)
    return 0;
  CUpti_PCSamplingStartParams st = {.size = CUpti_PCSamplingStartParamsSize};
  st.ctx = p->ctx;
  AG__CP(p, cuptiPCSamplingStart(&st));
  p->started = 1;
  return 0;
}

/* Merges one buffer's PC records into the rows and notes the read. */
static int merge(ag_pcs *p, pcs_buf *b, const char *from, int oom) {
  if (p->nreads < PCS_MAX_READS) {
    pcs_read *rd = &p->reads[p->nreads++];
    rd->from = from;
    rd->total = b->d.totalSamples, rd->dropped = b->d.droppedSamples;
    rd->non_user = b->d.nonUsrKernelsTotalSamples, rd->pcs = b->d.totalNumPcs;
    rd->hw_full = b->d.hardwareBufferFull, rd->oom = oom;
  } else {
    p->reads_lost++;
  }
  for (size_t i = 0; i < b->d.totalNumPcs && i < PCS_BUF_PCS; i++) {
    const CUpti_PCSamplingPCData *d = &b->pc[i];
    for (size_t k = 0; k < d->stallReasonCount; k++)
      if (ag_sassm_offline_add(p->rows, (uint32_t)d->cubinCrc, d->functionIndex,
                               (uint32_t)d->pcOffset, d->functionName,
                               d->stallReason[k].pcSamplingStallReasonIndex,
                               d->stallReason[k].samples))
        return AG_HOST_ENOMEM;
    /* functionName: CUPTI's string, shared by every record of the
     * function (freeing it per record frees it twice, seen on the H200);
     * the few bytes per function stay allocated */
  }
  b->d.totalNumPcs = 0;
  return 0;
}

int ag_pcs_end(ag_pcs *p, char *err, size_t errlen) {
  if (!p->started)
    return 0;
  CUpti_PCSamplingStopParams sp = {.size = CUpti_PCSamplingStopParamsSize};
  sp.ctx = p->ctx;
  AG__CP(p, cuptiPCSamplingStop(&sp));
  p->started = 0;
  p->ranges++;
  for (int guard = 0; guard < 100000; guard++) {
    CUpti_PCSamplingGetDataParams gd = {.size = CUpti_PCSamplingGetDataParamsSize};
    gd.ctx = p->ctx;
    gd.pcSamplingData = &p->rd.d;
    p->rd.d.collectNumPcs = PCS_BUF_PCS;
    CUptiResult r = p->cuptiPCSamplingGetData(&gd);
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY)
      return AG__CUPTI_FAIL(p, r, "cuptiPCSamplingGetData", err, errlen);
    size_t got = p->rd.d.totalNumPcs, left = p->rd.d.remainingNumPcs;
    if (merge(p, &p->rd, "get_data", r == CUPTI_ERROR_OUT_OF_MEMORY)) {
      ag__seterr(err, errlen, "out of memory merging PC-sampling records");
      return AG_HOST_ENOMEM;
    }
    if (!left || (!got && r != CUPTI_SUCCESS))
      break;
  }
  /* what stayed in the configuration buffer comes with the disable */
  CUpti_PCSamplingDisableParams dp = {.size = CUpti_PCSamplingDisableParamsSize};
  dp.ctx = p->ctx;
  CUptiResult r = p->cuptiPCSamplingDisable(&dp);
  p->enabled = 0;
  if (r != CUPTI_SUCCESS)
    return AG__CUPTI_FAIL(p, r, "cuptiPCSamplingDisable", err, errlen);
  if (merge(p, &p->cfg, "disable", 0)) {
    ag__seterr(err, errlen, "out of memory merging PC-sampling records");
    return AG_HOST_ENOMEM;
  }
  return 0;
}

void ag_pcs_disasm(ag_pcs *p, const char *cubin_path) { ag_sassm_disasm(p->rows, cubin_path); }

uint64_t ag_pcs_samples(const ag_pcs *p) {
  uint64_t t = 0;
  for (size_t i = 0; i < p->ncollected; i++)
    t += ag_sassm_total(p->rows, p->reason_names[i]);
  return t;
}

void ag_pcs_json(const ag_pcs *p, ag_jb *j) {
  uint64_t total = 0, dropped = 0, non_user = 0, pcs = 0;
  int full = 0, oom = 0;
  for (int i = 0; i < p->nreads; i++) {
    total += p->reads[i].total, dropped += p->reads[i].dropped;
    non_user += p->reads[i].non_user, pcs += p->reads[i].pcs;
    full += p->reads[i].hw_full, oom += p->reads[i].oom;
  }
  ag_jb_printf(j, "\"cupti_version\":%u,\"mode\":\"continuous\",\"period_log2\":%u,"
                  "\"period_cycles\":%llu,\"subscriber\":\"argus (the process's one CUPTI "
                  "subscriber)\",\"chip_reasons\":%zu,\"reasons\":[",
               p->version, p->period, 1ull << p->period, p->nreasons);
  for (size_t i = 0; i < p->nreasons; i++) {
    ag_jb_printf(j, "%s{\"index\":%u,\"name\":", i ? "," : "", p->reason_idx[i]);
    ag_jb_str(j, p->reason_names[i]);
    ag_jb_printf(j, ",\"collected\":%s}", i < p->ncollected ? "true" : "false");
  }
  ag_jb_printf(j, "],\"total_samples\":%llu,\"dropped_samples\":%llu,"
                  "\"non_user_samples\":%llu,\"pc_records\":%llu,\"hw_buffer_full\":%d,"
                  "\"out_of_memory_reads\":%d,\"reads_not_listed\":%d,\"reads\":[",
               (unsigned long long)total, (unsigned long long)dropped,
               (unsigned long long)non_user, (unsigned long long)pcs, full, oom, p->reads_lost);
  for (int i = 0; i < p->nreads; i++)
    ag_jb_printf(j, "%s{\"from\":\"%s\",\"total\":%llu,\"dropped\":%llu,\"non_user\":%llu,"
                    "\"pcs\":%llu,\"hw_full\":%d,\"oom\":%d}",
                 i ? "," : "", p->reads[i].from, (unsigned long long)p->reads[i].total,
                 (unsigned long long)p->reads[i].dropped, (unsigned long long)p->reads[i].non_user,
                 (unsigned long long)p->reads[i].pcs, p->reads[i].hw_full, p->reads[i].oom);
  ag_jb_printf(j, "],");
  ag_sassm_offline_ranges(p->rows, p->ranges);
  ag_sassm_json_rows(p->rows, j);
}

void ag_pcs_close(ag_pcs *p) {
  if (!p)
    return;
  if (p->started) {
    CUpti_PCSamplingStopParams sp = {.size = CUpti_PCSamplingStopParamsSize};
    sp.ctx = p->ctx;
    p->cuptiPCSamplingStop(&sp);
  }
  if (p->enabled) {
    CUpti_PCSamplingDisableParams dp = {.size = CUpti_PCSamplingDisableParamsSize};
    dp.ctx = p->ctx;
    p->cuptiPCSamplingDisable(&dp);
  }
  if (p->subscribed)
    p->cuptiUnsubscribe(p->sub);
  for (size_t i = 0; p->reason_names && i < p->nreasons; i++)
    free(p->reason_names[i]);
  free(p->reason_names);
  free(p->reason_idx);
  free(p->cfg.pc), free(p->cfg.sr), free(p->rd.pc), free(p->rd.sr);
  ag_sassm_close(p->rows);
  free(p);
}
