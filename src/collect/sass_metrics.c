/*
 * sass_metrics.c — the CUPTI SASS-metrics collector (sass_metrics.h,
 * docs/sass-metrics.md): CUPTI patches every SASS instruction of a kernel
 * at its first launch in a range and counts, per PC, warp instructions,
 * thread instructions, predicated-on thread instructions and the memory and
 * branch instruction kinds the chip lists. The collector owns the process's
 * one CUPTI subscriber (a second tool is refused with a clear message),
 * merges the records of every range by (cubin CRC, function, pcOffset), and
 * reads the opcode of every PC from nvdisasm of the same cubin, so the CPU
 * side can classify instructions without a disassembler.
 *
 * CUPTI is opened with dlopen (libargus_host depends on libc alone); every
 * CUPTI call goes through AG__CP(), which names the call and CUPTI's error.
 * Records come flushed one per (PC, metric) at GPU granularity (seen on the
 * H200, CUPTI 2025.3: numOfInstances 1): rows are kept in an open-addressed
 * table keyed by (crc, function index, pc).
 *
 * Load: one collection per harness run; a flush of N records is O(N), the
 * disassembly one process run per cubin. The patched kernel itself is slow
 * (timings under patching mean nothing: effect patches_sass).
 */
#define _GNU_SOURCE
#include "sass_metrics.h"

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argus/host.h"
#include "cupti_lib.h"

extern char **environ;

const char ag_sassm_default_metrics[] =
    "smsp__sass_inst_executed,"
    "smsp__sass_thread_inst_executed,"
    "smsp__sass_thread_inst_executed_pred_on,"
    "smsp__sass_inst_executed_op_global_ld,"
    "smsp__sass_inst_executed_op_global_st,"
    "smsp__sass_inst_executed_op_shared_ld,"
    "smsp__sass_inst_executed_op_shared_st,"
    "smsp__sass_inst_executed_op_shared_gmma,"
    "smsp__sass_inst_executed_op_ldgsts,"
    "smsp__sass_inst_executed_op_tma,"
    "smsp__sass_inst_executed_op_local,"
    "smsp__sass_inst_executed_op_atom,"
    "smsp__sass_inst_executed_op_branch,"
    "smsp__sass_thread_inst_executed_op_branch,"
    "smsp__sass_branch_targets_threads_divergent";

#define AG_CUPTI_FUNCS(X)                                                      \
  X(cuptiGetResultString)                                                      \
  X(cuptiGetVersion)                                                           \
  X(cuptiSubscribe)                                                            \
  X(cuptiUnsubscribe)                                                          \
  X(cuptiProfilerInitialize)                                                   \
  X(cuptiProfilerDeInitialize)                                                 \
  X(cuptiDeviceGetChipName)                                                    \
  X(cuptiSassMetricsGetNumOfMetrics)                                           \
  X(cuptiSassMetricsGetMetrics)                                                \
  X(cuptiSassMetricsGetProperties)                                             \
  X(cuptiSassMetricsSetConfig)                                                 \
  X(cuptiSassMetricsUnsetConfig)                                               \
  X(cuptiSassMetricsEnable)                                                    \
  X(cuptiSassMetricsDisable)                                                   \
  X(cuptiSassMetricsGetDataProperties)                                         \
  X(cuptiSassMetricsFlushData)                                                 \
  X(cuptiGetCubinCrc)

typedef struct metric {
  char *name, *desc;
  uint64_t id;
} metric;

typedef struct row {
  uint32_t crc, fidx, pc;
  int fn; /* index into fns */
  uint64_t v[AG_SASSM_MAX_METRICS];
} row;

typedef struct insn {
  int fn; /* index into fns */
  uint32_t pc;
  char *pred, *op, *args;
} insn;

typedef struct label {
  int fn;
  uint32_t pc;
  char *name;
} label;

struct ag_sassm {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_CUPTI_FUNCS(AG__FP)
#undef AG__FP
  CUcontext ctx;
  int device;
  uint32_t version;
  CUpti_SubscriberHandle sub;
  int subscribed, profiler, configured, enabled;
  int lazy; /* ARGUS_SASS_LAZY (default 1): patch at the first launch, else at the range start */
  char chip[64];
  metric m[AG_SASSM_MAX_METRICS];
  int nm;
  char **chip_metrics; /* every SASS metric the chip lists */
  size_t nchip;
  char *unavailable; /* requested metrics the chip lacks, comma list */
  uint64_t cubins[16];
  size_t cubin_bytes[16];
  int ncubins;
  uint32_t ranges;
  uint64_t dropped;
  /* what CUPTI said at the last range's end (GetDataProperties, Disable):
   * the failure message names them */
  size_t last_records, last_instances, last_dropped;
  row *rows;
  size_t nrows, caprows;
  uint32_t *slots; /* open addressing: row index + 1, 0 empty */
  size_t nslots;
  char **fns;
  int nfns;
  insn *ins;
  size_t nins, capins;
  label *labels;
  size_t nlabels, caplabels;
  char *disasm_status; /* NULL: parsed; else why no opcodes */
  char *disasm_tool;
};

static int load_cupti(ag_sassm *s, char *err, size_t errlen) {
  if (!(s->lib = ag__cupti_lib("SASS metrics", err, errlen)))
    return AG_HOST_ENODEV;
#define AG__LOAD(fn)                                                           \
  *(void **)(&s->fn) = dlsym(s->lib, #fn);                                     \
  if (!s->fn) {                                                                \
    ag__cupti_lacks("SASS metrics", #fn, err, errlen);                         \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_CUPTI_FUNCS(AG__LOAD)
#undef AG__LOAD
  return 0;
}

static int subscribe(ag_sassm *s, char *err, size_t errlen) {
  void *h = NULL;
  int rc = ag__cupti_subscribe((void *)s->cuptiSubscribe, &h, "SASS metrics", err, errlen);
  s->sub = h;
  if (rc)
    return rc;
  s->subscribed = 1;
  return 0;
}

static void add_unavailable(ag_sassm *s, const char *name) {
  size_t old = s->unavailable ? strlen(s->unavailable) : 0;
  char *p = realloc(s->unavailable, old + strlen(name) + 2);
  if (!p)
    return;
  if (old)
    p[old++] = ',';
  strcpy(p + old, name);
  s->unavailable = p;
}

static int list_chip_metrics(ag_sassm *s, char *err, size_t errlen) {
  CUpti_SassMetrics_GetNumOfMetrics_Params nm = {.structSize = CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE};
  nm.pChipName = s->chip;
  AG__CP(s, cuptiSassMetricsGetNumOfMetrics(&nm));
  if (!nm.numOfMetrics || nm.numOfMetrics > 4096)
    return 0;
  CUpti_SassMetrics_MetricDetails *md = calloc(nm.numOfMetrics, sizeof *md);
  s->chip_metrics = calloc(nm.numOfMetrics, sizeof *s->chip_metrics);
  if (!md || !s->chip_metrics) {
    free(md);
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  CUpti_SassMetrics_GetMetrics_Params gm = {.structSize = CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE};
  gm.pChipName = s->chip;
  gm.numOfMetrics = nm.numOfMetrics;
  gm.pMetricsList = md;
  CUptiResult r = s->cuptiSassMetricsGetMetrics(&gm);
  for (size_t i = 0; r == CUPTI_SUCCESS && i < nm.numOfMetrics; i++)
    if (md[i].pMetricName && (s->chip_metrics[s->nchip] = strdup(md[i].pMetricName)))
      s->nchip++;
  free(md);
  if (r != CUPTI_SUCCESS)
    return AG__CUPTI_FAIL(s, r, "cuptiSassMetricsGetMetrics", err, errlen);
  return 0;
}

/* Resolves the comma list of metric names on the chip into s->m. */
static int resolve_metrics(ag_sassm *s, const char *list, char *err, size_t errlen) {
  char *copy = strdup(list), *save = NULL;
  if (!copy) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
    if (s->nm == AG_SASSM_MAX_METRICS) {
      ag__seterr(err, errlen, "too many SASS metrics requested (at most %d)", AG_SASSM_MAX_METRICS);
      free(copy);
      return AG_HOST_EINVAL;
    }
    CUpti_SassMetrics_GetProperties_Params gp = {.structSize = CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    gp.pChipName = s->chip;
    gp.pMetricName = t;
    if (s->cuptiSassMetricsGetProperties(&gp) != CUPTI_SUCCESS) {
      add_unavailable(s, t);
      continue;
    }
    metric *m = &s->m[s->nm];
    m->id = gp.metric.metricId;
    m->name = strdup(t);
    m->desc = strdup(gp.metric.pMetricDescription ? gp.metric.pMetricDescription : "");
    if (!m->name || !m->desc) {
      free(copy);
      ag__seterr(err, errlen, "out of memory");
      return AG_HOST_ENOMEM;
    }
    s->nm++;
  }
  free(copy);
  if (!s->nm) {
    ag__seterr(err, errlen, "none of the requested SASS metrics ('%s') exists on chip '%s'", list,
           s->chip);
    return AG_HOST_EUNSUPPORTED;
  }
  return 0;
}

static int configure(ag_sassm *s, char *err, size_t errlen) {
  CUpti_SassMetrics_Config cfg[AG_SASSM_MAX_METRICS];
  for (int i = 0; i < s->nm; i++) {
    cfg[i].metricId = s->m[i].id;
    cfg[i].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
  }
  CUpti_SassMetricsSetConfig_Params sc = {.structSize = CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sc.numOfMetricConfig = (size_t)s->nm;
  sc.pConfigs = cfg;
  sc.deviceIndex = (uint32_t)s->device;
  AG__CP(s, cuptiSassMetricsSetConfig(&sc));
  s->configured = 1;
  return 0;
}

int ag_sassm_open(void *ctx, int device, const char *metrics, ag_sassm **out, char *err,
                  size_t errlen) {
  *out = NULL;
  ag_sassm *s = calloc(1, sizeof *s);
  if (!s) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  s->ctx = (CUcontext)ctx;
  s->device = device;
  const char *lz = getenv("ARGUS_SASS_LAZY");
  s->lazy = !(lz && !strcmp(lz, "0"));
  const char *env = getenv("ARGUS_SASS_METRICS");
  const char *list = metrics ? metrics : env && *env ? env : ag_sassm_default_metrics;
  int rc;
  if ((rc = load_cupti(s, err, errlen)) || (rc = subscribe(s, err, errlen)))
    goto out;
  s->cuptiGetVersion(&s->version);
  CUpti_Profiler_Initialize_Params pi = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CUptiResult r = s->cuptiProfilerInitialize(&pi);
  if (r != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(s, r, "cuptiProfilerInitialize", err, errlen);
    goto out;
  }
  s->profiler = 1;
  CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = (size_t)device;
  if ((r = s->cuptiDeviceGetChipName(&cn)) != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(s, r, "cuptiDeviceGetChipName", err, errlen);
    goto out;
  }
  snprintf(s->chip, sizeof s->chip, "%s", cn.pChipName ? cn.pChipName : "?");
  if ((rc = list_chip_metrics(s, err, errlen)) || (rc = resolve_metrics(s, list, err, errlen)) ||
      (rc = configure(s, err, errlen)))
    goto out;
  *out = s;
out:
  if (rc)
    ag_sassm_close(s);
  return rc;
}

int ag_sassm_cubin(ag_sassm *s, const void *image, size_t bytes, char *err, size_t errlen) {
  CUpti_GetCubinCrcParams cc = {.size = CUpti_GetCubinCrcParamsSize};
  cc.cubin = image;
  cc.cubinSize = bytes;
  AG__CP(s, cuptiGetCubinCrc(&cc));
  for (int i = 0; i < s->ncubins; i++)
    if (s->cubins[i] == cc.cubinCrc)
      return 0; /* the same image loaded again */
  if (s->ncubins == (int)(sizeof s->cubins / sizeof *s->cubins)) {
    ag__seterr(err, errlen, "too many cubins for one SASS-metrics collection (at most 16)");
    return AG_HOST_EINVAL;
  }
  s->cubins[s->ncubins] = cc.cubinCrc;
  s->cubin_bytes[s->ncubins++] = bytes;
  return 0;
}

int ag_sassm_begin(ag_sassm *s, char *err, size_t errlen) {
  if (s->enabled)
    return 0;
  CUpti_SassMetricsEnable_Params en = {.structSize = CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  en.ctx = s->ctx;
  en.enableLazyPatching = (uint8_t)s->lazy;
  AG__CP(s, cuptiSassMetricsEnable(&en));
  s->enabled = 1;
  return 0;
}

/* ------------------------------------------------------------------ rows */

/* v (n of *cap elements of `size` bytes used) with room for one more: the
 * capacity doubled from `first` when full (*cap updated); NULL, v kept,
 * when out of memory. */
static void *grow(void *v, size_t n, size_t *cap, size_t size, size_t first) {
  if (n < *cap)
    return v;
  size_t c = *cap ? 2 * *cap : first;
  void *p = realloc(v, c * size);
  if (p)
    *cap = c;
  return p;
}

static int intern_fn(ag_sassm *s, const char *name) {
  name = name ? name : "?";
  for (int i = s->nfns - 1; i >= 0; i--)
    if (!strcmp(s->fns[i], name))
      return i;
  char **p = realloc(s->fns, (size_t)(s->nfns + 1) * sizeof *p);
  if (!p)
    return -1;
  s->fns = p;
  if (!(p[s->nfns] = strdup(name)))
    return -1;
  return s->nfns++;
}

static size_t hash3(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t h = 1469598103934665603ull;
  h = (h ^ a) * 1099511628211ull;
  h = (h ^ b) * 1099511628211ull;
  h = (h ^ c) * 1099511628211ull;
  return (size_t)(h ^ (h >> 29));
}

static int rehash(ag_sassm *s, size_t nslots) {
  uint32_t *t = calloc(nslots, sizeof *t);
  if (!t)
    return AG_HOST_ENOMEM;
  for (size_t i = 0; i < s->nrows; i++) {
    size_t k = hash3(s->rows[i].crc, s->rows[i].fidx, s->rows[i].pc) & (nslots - 1);
    while (t[k])
      k = (k + 1) & (nslots - 1);
    t[k] = (uint32_t)i + 1;
  }
  free(s->slots);
  s->slots = t;
  s->nslots = nslots;
  return 0;
}

/* The row of (crc, fidx, pc), made when new; NULL when out of memory. */
static row *row_for(ag_sassm *s, uint32_t crc, uint32_t fidx, uint32_t pc, const char *fn) {
  if (2 * (s->nrows + 1) > s->nslots && rehash(s, s->nslots ? 2 * s->nslots : 1024))
    return NULL;
  size_t k = hash3(crc, fidx, pc) & (s->nslots - 1);
  for (; s->slots[k]; k = (k + 1) & (s->nslots - 1)) {
    row *r = &s->rows[s->slots[k] - 1];
    if (r->crc == crc && r->fidx == fidx && r->pc == pc)
      return r;
  }
  row *rows = grow(s->rows, s->nrows, &s->caprows, sizeof *rows, 1024);
  if (!rows)
    return NULL;
  s->rows = rows;
  int f = intern_fn(s, fn);
  if (f < 0)
    return NULL;
  row *r = &s->rows[s->nrows];
  memset(r, 0, sizeof *r);
  r->crc = crc, r->fidx = fidx, r->pc = pc, r->fn = f;
  s->slots[k] = (uint32_t)++s->nrows;
  return r;
}

static int metric_col(const ag_sassm *s, uint64_t id) {
  for (int i = 0; i < s->nm; i++)
    if (s->m[i].id == id)
      return i;
  return -1;
}

int ag_sassm_end(ag_sassm *s, char *err, size_t errlen) {
  if (!s->enabled)
    return 0;
  CUpti_SassMetricsGetDataProperties_Params dp = {.structSize = CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  dp.ctx = s->ctx;
  AG__CP(s, cuptiSassMetricsGetDataProperties(&dp));
  size_t nrec = dp.numOfPatchedInstructionRecords, ninst = dp.numOfInstances;
  s->last_records = nrec, s->last_instances = ninst;
  CUpti_SassMetrics_Data *d = NULL;
  CUpti_SassMetrics_InstanceValue *iv = NULL;
  int rc = 0;
  if (nrec && ninst) {
    d = calloc(nrec, sizeof *d);
    iv = calloc(nrec * ninst, sizeof *iv);
    if (!d || !iv) {
      ag__seterr(err, errlen, "out of memory for %zu SASS-metric records", nrec);
      rc = AG_HOST_ENOMEM;
      goto out;
    }
    for (size_t i = 0; i < nrec; i++) {
      d[i].structSize = sizeof *d;
      d[i].pInstanceValues = &iv[i * ninst];
    }
    CUpti_SassMetricsFlushData_Params fp = {.structSize = CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    fp.ctx = s->ctx;
    fp.numOfPatchedInstructionRecords = nrec;
    fp.numOfInstances = ninst;
    fp.pMetricsData = d;
    CUptiResult r = s->cuptiSassMetricsFlushData(&fp);
    if (r != CUPTI_SUCCESS) {
      rc = AG__CUPTI_FAIL(s, r, "cuptiSassMetricsFlushData", err, errlen);
      goto out;
    }
    for (size_t i = 0; i < nrec; i++) {
      row *rw = row_for(s, d[i].cubinCrc, d[i].functionIndex, d[i].pcOffset, d[i].functionName);
      if (!rw) {
        ag__seterr(err, errlen, "out of memory merging SASS-metric records");
        rc = AG_HOST_ENOMEM;
        goto out;
      }
      for (size_t j = 0; j < ninst; j++) { /* instances: SMs or SMSPs at finer granularity */
        int c = metric_col(s, d[i].pInstanceValues[j].metricId);
        if (c >= 0)
          rw->v[c] += d[i].pInstanceValues[j].value;
      }
    }
  }
  CUpti_SassMetricsDisable_Params ds = {.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  ds.ctx = s->ctx;
  CUptiResult r = s->cuptiSassMetricsDisable(&ds);
  s->enabled = 0;
  if (r != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(s, r, "cuptiSassMetricsDisable", err, errlen);
    goto out;
  }
  s->dropped += ds.numOfDroppedRecords;
  s->last_dropped = ds.numOfDroppedRecords;
  s->ranges++;
out:
  free(d);
  free(iv);
  return rc;
}

static int named_cubin(const ag_sassm *s, uint32_t crc) {
  for (int i = 0; i < s->ncubins; i++)
    if ((uint32_t)s->cubins[i] == crc)
      return 1;
  return 0;
}

size_t ag_sassm_other(const ag_sassm *s, char *buf, size_t n) {
  size_t k = 0, len = 0;
  if (n)
    buf[0] = 0;
  for (size_t i = 0; s && i < s->nrows; i++) {
    if (named_cubin(s, s->rows[i].crc))
      continue;
    if (!k++ || !strstr(buf, s->fns[s->rows[i].fn])) {
      int w = snprintf(buf + len, len < n ? n - len : 0, "%s%s (crc %u)", len ? ", " : "",
                       s->fns[s->rows[i].fn], s->rows[i].crc);
      if (w > 0 && len + (size_t)w < n)
        len += (size_t)w;
    }
  }
  return k;
}

void ag_sassm_end_state(const ag_sassm *s, size_t *records, size_t *instances,
                        size_t *dropped) {
  *records = s ? s->last_records : 0;
  *instances = s ? s->last_instances : 0;
  *dropped = s ? s->last_dropped : 0;
}

size_t ag_sassm_rows(const ag_sassm *s) {
  size_t n = 0;
  for (size_t i = 0; s && i < s->nrows; i++)
    n += named_cubin(s, s->rows[i].crc);
  return n;
}

uint64_t ag_sassm_total(const ag_sassm *s, const char *name) {
  int c = -1;
  for (int i = 0; s && i < s->nm; i++)
    if (!strcmp(s->m[i].name, name))
      c = i;
  uint64_t t = 0;
  for (size_t i = 0; c >= 0 && i < s->nrows; i++)
    if (named_cubin(s, s->rows[i].crc))
      t += s->rows[i].v[c];
  return t;
}

/* ------------------------------------------------------------- opcodes */

static char *dupn(const char *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, p, n);
    d[n] = 0;
  }
  return d;
}

static int add_insn(ag_sassm *s, int fn, uint32_t pc, const char *pred, size_t pl,
                    const char *op, size_t ol, const char *args, size_t al) {
  insn *ins = grow(s->ins, s->nins, &s->capins, sizeof *ins, 1024);
  if (!ins)
    return -1;
  s->ins = ins;
  insn *in = &s->ins[s->nins];
  in->fn = fn, in->pc = pc;
  in->pred = dupn(pred, pl), in->op = dupn(op, ol), in->args = dupn(args, al);
  if (!in->pred || !in->op || !in->args) {
    free(in->pred), free(in->op), free(in->args);
    return -1;
  }
  s->nins++;
  return 0;
}

static int add_label(ag_sassm *s, int fn, uint32_t pc, const char *name, size_t n) {
  label *labels = grow(s->labels, s->nlabels, &s->caplabels, sizeof *labels, 64);
  if (!labels)
    return -1;
  s->labels = labels;
  label *l = &s->labels[s->nlabels];
  l->fn = fn, l->pc = pc;
  if (!(l->name = dupn(name, n)))
    return -1;
  s->nlabels++;
  return 0;
}

/* nvdisasm -c: ".section .text.NAME,..." opens function NAME; a label at
 * the start of a line ("$kern$_Z3mixff:", ".L_x_2:") names the next PC (the
 * non-local ones are kept: the function itself and the device functions
 * ptxas placed in its section); "/[*]0130[*]/ @!P0 OPC.MOD args ;" is an
 * instruction. Everything else is skipped. */
/* How many hex digits start p (before end). */
static size_t hex_digits(const char *p, const char *end) {
  size_t n = 0;
  while (p + n < end && isxdigit((unsigned char)p[n]))
    n++;
  return n;
}

size_t ag_sassm_parse_disasm(ag_sassm *s, const char *text) {
  int fn = -1;
  size_t hex;
  size_t n0 = s->nins;
  const char *pend_label = NULL;
  size_t pend_len = 0;
  for (const char *line = text; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    const char *sec = memmem(line, len, ".section", 8);
    const char *tx = sec ? memmem(line, len, ".text.", 6) : NULL;
    const char *ins = memmem(line, len, "/*", 2);
    if (tx) {
      const char *nm = tx + 6, *e = nm;
      while (e < line + len && *e != ',' && *e != ' ' && *e != '\t' && *e != '"')
        e++;
      char *name = dupn(nm, (size_t)(e - nm));
      fn = name ? intern_fn(s, name) : -1;
      free(name);
      pend_label = NULL;
    } else if (fn >= 0 && len > 1 && line[0] != ' ' && line[0] != '\t' && line[0] != '.' &&
               line[0] != '/' && line[len - 1] == ':') {
      pend_label = line;
      pend_len = len - 1;
    } else if (fn >= 0 && ins && (hex = hex_digits(ins + 2, line + len)) >= 4 &&
               ins + 2 + hex + 2 < line + len && ins[2 + hex] == '*' && ins[3 + hex] == '/') {
      /* the offset: 4 hex digits, 5 and more past 0xffff (a kernel of more
       * than 4,096 instructions) */
      uint32_t pc = (uint32_t)strtoul(ins + 2, NULL, 16);
      const char *p = ins + 4 + hex, *end = line + len;
      while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
      if (end > p && end[-1] == ';')
        end--;
      while (p < end && (*p == ' ' || *p == '\t'))
        p++;
      const char *pred = p;
      size_t pl = 0;
      if (p < end && *p == '@') {
        while (p < end && *p != ' ')
          p++;
        pl = (size_t)(p - pred);
        while (p < end && *p == ' ')
          p++;
      }
      const char *op = p;
      while (p < end && *p != ' ' && *p != ';')
        p++;
      size_t ol = (size_t)(p - op);
      while (p < end && *p == ' ')
        p++;
      const char *args = p;
      size_t al = (size_t)(end - args);
      while (al && args[al - 1] == ' ')
        al--;
      if (ol && add_insn(s, fn, pc, pred, pl, op, ol, args, al))
        break;
      if (pend_label && add_label(s, fn, pc, pend_label, pend_len))
        break;
      pend_label = NULL;
    }
    line = eol ? eol + 1 : NULL;
  }
  return s->nins - n0;
}

/* Runs argv with stdout into *out (NUL-terminated); 0 on exit status 0. */
static int run_capture(char *const argv[], char **out, char *why, size_t wn) {
  int pfd[2];
  *out = NULL;
  if (pipe(pfd)) {
    ag__seterr(why, wn, "pipe: %s", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (e) {
    close(pfd[0]);
    ag__seterr(why, wn, "cannot run '%s': %s", argv[0], strerror(e));
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (ssize_t k; buf;) {
    if (n + 1 >= cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    k = read(pfd[0], buf + n, cap - n - 1);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      break;
    n += (size_t)k;
  }
  close(pfd[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (!buf) {
    ag__seterr(why, wn, "out of memory reading '%s' output", argv[0]);
    return -1;
  }
  buf[n] = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    free(buf);
    ag__seterr(why, wn, "'%s' failed (%s %d)", argv[0], WIFEXITED(st) ? "exit status" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return -1;
  }
  *out = buf;
  return 0;
}

void ag_sassm_disasm(ag_sassm *s, const char *cubin_path) {
  char tool[4096], why[4800] = "";
  const char *env = getenv("ARGUS_NVDISASM"), *home = getenv("CUDA_HOME");
  if (env && *env)
    snprintf(tool, sizeof tool, "%s", env);
  else if (home && *home)
    snprintf(tool, sizeof tool, "%s/bin/nvdisasm", home);
  else if (access("/usr/local/cuda/bin/nvdisasm", X_OK) == 0)
    snprintf(tool, sizeof tool, "/usr/local/cuda/bin/nvdisasm");
  else
    snprintf(tool, sizeof tool, "nvdisasm");
  free(s->disasm_tool);
  s->disasm_tool = strdup(tool);
  char *argv[] = {tool, "-c", (char *)cubin_path, NULL};
  char *text = NULL;
  if (run_capture(argv, &text, why, sizeof why) == 0 && ag_sassm_parse_disasm(s, text) == 0)
    snprintf(why, sizeof why, "'%s -c %s' printed no instructions", tool, cubin_path);
  free(text);
  free(s->disasm_status);
  s->disasm_status = why[0] ? strdup(why) : NULL;
}

ag_sassm *ag_sassm_new_offline(void) { return calloc(1, sizeof(ag_sassm)); }

int ag_sassm_offline_metric(ag_sassm *s, const char *name, uint64_t id) {
  if (s->nm == AG_SASSM_MAX_METRICS)
    return AG_HOST_EINVAL;
  metric *m = &s->m[s->nm];
  m->id = id;
  m->name = strdup(name);
  m->desc = strdup("");
  if (!m->name || !m->desc) {
    free(m->name), free(m->desc);
    return AG_HOST_ENOMEM;
  }
  s->nm++;
  return 0;
}

int ag_sassm_offline_cubin(ag_sassm *s, uint64_t crc, size_t bytes) {
  for (int i = 0; i < s->ncubins; i++)
    if (s->cubins[i] == crc)
      return 0;
  if (s->ncubins == (int)(sizeof s->cubins / sizeof *s->cubins))
    return AG_HOST_EINVAL;
  s->cubins[s->ncubins] = crc;
  s->cubin_bytes[s->ncubins++] = bytes;
  return 0;
}

void ag_sassm_offline_ranges(ag_sassm *s, uint32_t ranges) { s->ranges = ranges; }

int ag_sassm_offline_add(ag_sassm *s, uint32_t crc, uint32_t fidx, uint32_t pc, const char *fn,
                         uint64_t id, uint64_t value) {
  row *rw = row_for(s, crc, fidx, pc, fn);
  if (!rw)
    return AG_HOST_ENOMEM;
  int c = metric_col(s, id);
  if (c >= 0)
    rw->v[c] += value;
  return 0;
}

/* ---------------------------------------------------------------- JSON */

static int cmp_row(const void *a, const void *b) {
  const row *x = a, *y = b;
  if (x->crc != y->crc)
    return x->crc < y->crc ? -1 : 1;
  if (x->fidx != y->fidx)
    return x->fidx < y->fidx ? -1 : 1;
  return (x->pc > y->pc) - (x->pc < y->pc);
}

void ag_sassm_json(const ag_sassm *s, ag_jb *j) {
  ag_jb_puts(j, "\"chip\":");
  ag_jb_str(j, s->chip[0] ? s->chip : NULL);
  ag_jb_printf(j, ",\"cupti_version\":%u,\"granularity\":\"gpu\",\"lazy_patching\":%s,"
                  "\"subscriber\":\"argus (the process's one CUPTI subscriber)\",\"metrics\":[",
               s->version, s->lazy ? "true" : "false");
  for (int i = 0; i < s->nm; i++) {
    ag_jb_printf(j, "%s{\"name\":", i ? "," : "");
    ag_jb_str(j, s->m[i].name);
    ag_jb_printf(j, ",\"id\":\"%llu\",\"description\":", (unsigned long long)s->m[i].id);
    ag_jb_str(j, s->m[i].desc);
    ag_jb_puts(j, "}");
  }
  ag_jb_puts(j, "],\"unavailable\":");
  ag_jb_str(j, s->unavailable ? s->unavailable : "");
  ag_jb_puts(j, ",\"chip_metrics\":[");
  for (size_t i = 0; i < s->nchip; i++) {
    ag_jb_puts(j, i ? "," : "");
    ag_jb_str(j, s->chip_metrics[i]);
  }
  ag_jb_puts(j, "],");
  ag_sassm_json_rows(s, j);
}

void ag_sassm_json_rows(const ag_sassm *s, ag_jb *j) {
  ag_jb_puts(j, "\"cubins\":[");
  for (int i = 0; i < s->ncubins; i++)
    ag_jb_printf(j, "%s{\"crc\":%llu,\"bytes\":%zu}", i ? "," : "",
                 (unsigned long long)s->cubins[i], s->cubin_bytes[i]);
  ag_jb_printf(j, "],\"ranges\":%u,\"dropped_records\":%llu,\"columns\":[\"cubin_crc\","
                  "\"function\",\"pc\"",
               s->ranges, (unsigned long long)s->dropped);
  for (int i = 0; i < s->nm; i++) {
    ag_jb_puts(j, ",");
    ag_jb_str(j, s->m[i].name);
  }
  ag_jb_puts(j, "],\"rows\":[");
  row *sorted = s->nrows ? malloc(s->nrows * sizeof *sorted) : NULL;
  if (s->nrows && !sorted) {
    j->oom = 1;
    return;
  }
  if (sorted) {
    memcpy(sorted, s->rows, s->nrows * sizeof *sorted);
    qsort(sorted, s->nrows, sizeof *sorted, cmp_row);
  }
  for (size_t i = 0; i < s->nrows; i++) {
    ag_jb_printf(j, "%s[%u,", i ? ",\n" : "\n", sorted[i].crc);
    ag_jb_str(j, s->fns[sorted[i].fn]);
    ag_jb_printf(j, ",%u", sorted[i].pc);
    for (int c = 0; c < s->nm; c++)
      ag_jb_printf(j, ",%llu", (unsigned long long)sorted[i].v[c]);
    ag_jb_puts(j, "]");
  }
  free(sorted);
  ag_jb_puts(j, "],\"sass\":{\"tool\":");
  ag_jb_str(j, s->disasm_tool);
  ag_jb_puts(j, ",\"status\":");
  ag_jb_str(j, s->disasm_tool ? s->disasm_status : "not run");
  ag_jb_puts(j, ",\"functions\":[");
  int first = 1;
  for (int f = 0; f < s->nfns; f++) {
    size_t k = 0;
    for (size_t i = 0; i < s->nins; i++)
      k += s->ins[i].fn == f;
    if (!k)
      continue;
    ag_jb_printf(j, "%s{\"name\":", first ? "" : ",");
    first = 0;
    ag_jb_str(j, s->fns[f]);
    ag_jb_puts(j, ",\"labels\":[");
    int fl = 1;
    for (size_t i = 0; i < s->nlabels; i++) {
      if (s->labels[i].fn != f)
        continue;
      ag_jb_puts(j, fl ? "[" : ",[");
      fl = 0;
      ag_jb_str(j, s->labels[i].name);
      ag_jb_printf(j, ",%u]", s->labels[i].pc);
    }
    ag_jb_puts(j, "],\"code\":[");
    int fi = 1;
    for (size_t i = 0; i < s->nins; i++) {
      const insn *in = &s->ins[i];
      if (in->fn != f)
        continue;
      ag_jb_printf(j, "%s[%u,", fi ? "\n" : ",\n", in->pc);
      fi = 0;
      ag_jb_str(j, in->pred);
      ag_jb_puts(j, ",");
      ag_jb_str(j, in->op);
      ag_jb_puts(j, ",");
      ag_jb_str(j, in->args);
      ag_jb_puts(j, "]");
    }
    ag_jb_puts(j, "]}");
  }
  ag_jb_puts(j, "]}");
}

void ag_sassm_close(ag_sassm *s) {
  if (!s)
    return;
  if (s->enabled) {
    CUpti_SassMetricsDisable_Params ds = {.structSize = CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
    ds.ctx = s->ctx;
    s->cuptiSassMetricsDisable(&ds);
  }
  if (s->configured) {
    CUpti_SassMetricsUnsetConfig_Params us = {.structSize = CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
    us.deviceIndex = (uint32_t)s->device;
    s->cuptiSassMetricsUnsetConfig(&us);
  }
  if (s->profiler) {
    CUpti_Profiler_DeInitialize_Params pd = {.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    s->cuptiProfilerDeInitialize(&pd);
  }
  if (s->subscribed)
    s->cuptiUnsubscribe(s->sub);
  /* the library stays loaded: CUPTI keeps hooks in the driver */
  for (int i = 0; i < s->nm; i++)
    free(s->m[i].name), free(s->m[i].desc);
  for (size_t i = 0; i < s->nchip; i++)
    free(s->chip_metrics[i]);
  free(s->chip_metrics);
  free(s->unavailable);
  for (int i = 0; i < s->nfns; i++)
    free(s->fns[i]);
  free(s->fns);
  for (size_t i = 0; i < s->nins; i++)
    free(s->ins[i].pred), free(s->ins[i].op), free(s->ins[i].args);
  free(s->ins);
  for (size_t i = 0; i < s->nlabels; i++)
    free(s->labels[i].name);
  free(s->labels);
  free(s->rows);
  free(s->slots);
  free(s->disasm_status);
  free(s->disasm_tool);
  free(s);
}
