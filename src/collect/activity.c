/*
 * activity.c — the CUPTI activity collector (activity.h, docs/system.md).
 * CUPTI writes activity records into buffers this collector hands it
 * (4 MiB each, on request, from any thread); when a buffer completes the
 * records of the kinds Argus reads are copied into one array (the strings
 * copied: CUPTI's kernel names live only as long as the buffer) and the
 * buffer is freed. Records CUPTI could not store are counted with
 * cuptiActivityGetNumDroppedRecords at every completed buffer and reported,
 * never dropped silently.
 *
 * Kinds: CONCURRENT_KERNEL (kernels keep running concurrently), MEMCPY,
 * MEMSET, SYNCHRONIZATION, STREAM, MARKER (NVTX). The API kinds (RUNTIME and
 * DRIVER, Argus's `api` kind) are off unless named: their record per call
 * costs launch time, and every device record already carries the
 * correlation ID of the call that made it. The comm signal names them (the
 * launch call's start is its launch overhead's origin, docs/comm.md); only
 * the calls whose correlation ID a kernel carries are written. A kernel
 * launched from a CUDA graph carries its graph and graph-node IDs (and the
 * graph launch's correlation ID); GRAPH_TRACE is not enabled: CUPTI refuses
 * it beside the kernel records, which it summarizes away.
 *
 * NVTX reaches CUPTI through NVTX's injection: at its first call the
 * harness's NVTX reads NVTX_INJECTION64_PATH and loads that library. With
 * the nvtx kind on, ag_act_open points the variable at the CUPTI library it
 * loaded, unless it is already set (another tool's injection is left alone
 * and the evidence says so); NVTX calls made before ag_host_open are not
 * seen unless the variable was set when the harness started.
 *
 * Load: one collector per harness run; a record costs CUPTI's work on the
 * launch path (measured in bench/bench_collect_costs.c) plus one copy here.
 */
#define _GNU_SOURCE
#include "activity.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argus/host.h"
#include "cupti_lib.h"

#define AG_ACT_FUNCS(X)                                                        \
  X(cuptiGetResultString)                                                      \
  X(cuptiGetVersion)                                                           \
  X(cuptiSubscribe)                                                            \
  X(cuptiUnsubscribe)                                                          \
  X(cuptiActivityRegisterCallbacks)                                            \
  X(cuptiActivityEnable)                                                       \
  X(cuptiActivityDisable)                                                      \
  X(cuptiActivityFlushAll)                                                     \
  X(cuptiActivityGetNextRecord)                                                \
  X(cuptiActivityGetNumDroppedRecords)                                         \
  X(cuptiGetTimestamp)                                                         \
  X(cuptiActivitySetAttribute)

#define BUF_BYTES (4u << 20)
#define NSPARE 2 /* buffers zeroed (and so faulted in) at open, off the launch path */

typedef enum rk {
  RK_KERNEL, RK_MEMCPY, RK_MEMSET, RK_SYNC, RK_STREAM, RK_MARKER, RK_API, RK_N
} rk;
static const char *const rk_name[] = {"kernel", "memcpy", "memset", "sync",
                                      "stream", "nvtx",   "api"};

typedef struct rec {
  rk kind;
  uint64_t start, end;
  uint32_t device, context, stream, corr;
  /* kernel */
  char *name;
  int32_t grid[3], block[3], cluster[3];
  int32_t static_smem, dynamic_smem;
  uint32_t regs, local_per_thread, graph;
  uint64_t graph_node; /* kernels, copies and sets launched from a CUDA graph */
  /* memcpy / memset */
  uint64_t bytes;
  uint32_t copy_kind, src_kind, dst_kind, value;
  /* sync / stream */
  uint32_t sync_type, event, priority, flag;
  /* nvtx marker: name (start and instant markers) in `name`, its domain
   * (NULL: the default one), the marker ID that pairs a start with its end,
   * start/end/instant in `flag`, the host process and thread */
  char *domain;
  uint32_t marker_id, pid, tid;
  /* api: runtime (flag 0) or driver (1) call, its callback ID in `event`,
   * the thread in `tid` */
} rec;

struct ag_act {
  void *lib;
#define AG__FP(fn) __typeof__(&fn) fn;
  AG_ACT_FUNCS(AG__FP)
#undef AG__FP
  uint32_t version;
  CUpti_SubscriberHandle sub;
  int subscribed, registered;
  int enabled[RK_N];
  pthread_mutex_t mu;
  rec *recs;
  size_t nrecs, cap;
  uint64_t dropped, buffers, bytes_used, other_kinds;
  int oom; /* a record could not be kept: reported as dropped too */
  uint64_t opened_ts;
  uint8_t *spare[NSPARE];
  int nspare;
  int zeroed; /* CUPTI takes our buffers as zeroed (ZEROED_OUT_ACTIVITY_BUFFER) */
  char nvtx_injection[1024]; /* NVTX_INJECTION64_PATH when the nvtx kind is on */
  int nvtx_ours;             /* ag_act_open set it to this CUPTI library */
};

static ag_act *g_act; /* CUPTI's buffer callbacks have no user pointer */

static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_STREAM,
    CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
static const char *const kind_names[] = {"CONCURRENT_KERNEL", "MEMCPY", "MEMSET",
                                         "SYNCHRONIZATION", "STREAM", "MARKER",
                                         "RUNTIME", "DRIVER"};
/* kinds[i]'s Argus kind (the api kind is two of CUPTI's) */
static const rk kind_rk[] = {RK_KERNEL, RK_MEMCPY, RK_MEMSET, RK_SYNC,
                             RK_STREAM, RK_MARKER, RK_API,    RK_API};

static uint8_t *zeroed_buffer(void) {
  uint8_t *b = aligned_alloc(8, BUF_BYTES);
  if (b)
    memset(b, 0, BUF_BYTES); /* CUPTI is told the buffer is zeroed; the pages are in */
  return b;
}

/* A spare buffer zeroed at open, else a fresh one (zeroed here: CUPTI
 * would zero it itself, on the thread that launches). */
static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  ag_act *a = g_act;
  *buffer = NULL;
  if (a) {
    pthread_mutex_lock(&a->mu);
    if (a->nspare)
      *buffer = a->spare[--a->nspare];
    pthread_mutex_unlock(&a->mu);
  }
  if (!*buffer)
    *buffer = zeroed_buffer();
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

static rec *push(ag_act *a) {
  if (a->nrecs == a->cap) {
    size_t c = a->cap ? 2 * a->cap : 1024;
    rec *p = realloc(a->recs, c * sizeof *p);
    if (!p)
      return NULL;
    a->recs = p;
    a->cap = c;
  }
  rec *r = &a->recs[a->nrecs++];
  memset(r, 0, sizeof *r);
  return r;
}

static void keep(ag_act *a, const CUpti_Activity *rcd) {
  rec *r;
  switch (rcd->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_KERNEL;
    r->start = k->start, r->end = k->end;
    r->device = k->deviceId, r->context = k->contextId, r->stream = k->streamId;
    r->corr = k->correlationId;
    r->name = strdup(k->name ? k->name : "?");
    r->grid[0] = k->gridX, r->grid[1] = k->gridY, r->grid[2] = k->gridZ;
    r->block[0] = k->blockX, r->block[1] = k->blockY, r->block[2] = k->blockZ;
    r->cluster[0] = (int32_t)k->clusterX, r->cluster[1] = (int32_t)k->clusterY;
    r->cluster[2] = (int32_t)k->clusterZ;
    r->static_smem = k->staticSharedMemory, r->dynamic_smem = k->dynamicSharedMemory;
    r->regs = k->registersPerThread, r->local_per_thread = k->localMemoryPerThread;
    r->graph = k->graphId, r->graph_node = k->graphNodeId;
    if (!r->name)
      a->nrecs--, a->oom = 1;
    return;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_MEMCPY;
    r->start = m->start, r->end = m->end, r->bytes = m->bytes;
    r->device = m->deviceId, r->context = m->contextId, r->stream = m->streamId;
    r->corr = m->correlationId;
    r->copy_kind = m->copyKind, r->src_kind = m->srcKind, r->dst_kind = m->dstKind;
    r->graph = m->graphId, r->graph_node = m->graphNodeId;
    return;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_MEMSET;
    r->start = m->start, r->end = m->end, r->bytes = m->bytes, r->value = m->value;
    r->device = m->deviceId, r->context = m->contextId, r->stream = m->streamId;
    r->corr = m->correlationId;
    r->graph = m->graphId, r->graph_node = m->graphNodeId;
    return;
  }
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
    const CUpti_ActivitySynchronization2 *s = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_SYNC;
    r->start = s->start, r->end = s->end, r->context = s->contextId;
    r->stream = s->streamId, r->corr = s->correlationId;
    r->sync_type = (uint32_t)s->type, r->event = s->cudaEventId;
    return;
  }
  case CUPTI_ACTIVITY_KIND_STREAM: {
    const CUpti_ActivityStream *s = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_STREAM;
    r->context = s->contextId, r->stream = s->streamId, r->corr = s->correlationId;
    r->priority = s->priority, r->flag = (uint32_t)s->flag;
    return;
  }
  case CUPTI_ACTIVITY_KIND_MARKER: {
    const CUpti_ActivityMarker2 *m = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_MARKER;
    r->start = r->end = m->timestamp;
    r->marker_id = m->id, r->flag = (uint32_t)m->flags;
    if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
        m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
      r->pid = m->objectId.pt.processId, r->tid = m->objectId.pt.threadId;
    r->name = m->name ? strdup(m->name) : NULL;
    r->domain = m->domain ? strdup(m->domain) : NULL;
    if ((m->name && !r->name) || (m->domain && !r->domain)) {
      free(r->name), free(r->domain);
      a->nrecs--, a->oom = 1;
    }
    return;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const CUpti_ActivityAPI *c = (const void *)rcd;
    if (!(r = push(a)))
      break;
    r->kind = RK_API;
    r->start = c->start, r->end = c->end, r->corr = c->correlationId;
    r->flag = rcd->kind == CUPTI_ACTIVITY_KIND_DRIVER, r->event = c->cbid;
    r->pid = c->processId, r->tid = c->threadId;
    return;
  }
  default:
    a->other_kinds++;
    return;
  }
  a->oom = 1; /* push failed */
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid) {
  (void)size;
  ag_act *a = g_act;
  if (!a) {
    free(buffer);
    return;
  }
  pthread_mutex_lock(&a->mu);
  a->buffers++;
  a->bytes_used += valid;
  CUpti_Activity *rcd = NULL;
  while (valid && a->cuptiActivityGetNextRecord(buffer, valid, &rcd) == CUPTI_SUCCESS)
    keep(a, rcd);
  size_t dropped = 0;
  if (a->cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
    a->dropped += dropped;
  pthread_mutex_unlock(&a->mu);
  free(buffer);
}

/* ARGUS_ACTIVITY_KINDS: a comma list of kernel, memcpy, memset, sync,
 * stream, nvtx, api (default: all but api). */
static int parse_kinds(const char *names, int want[RK_N], char *err, size_t errlen) {
  const char *e = names ? names : getenv("ARGUS_ACTIVITY_KINDS");
  for (int i = 0; i < RK_N; i++)
    want[i] = !(e && *e) && i != RK_API;
  if (!(e && *e))
    return 0;
  for (const char *p = e; *p;) {
    size_t n = strcspn(p, ",");
    int k = -1;
    for (int i = 0; i < RK_N; i++)
      if (strlen(rk_name[i]) == n && !strncmp(p, rk_name[i], n))
        k = i;
    if (k < 0) {
      ag__seterr(err, errlen,
                 "%s='%s': '%.*s' is not an activity kind (known: kernel, "
                 "memcpy, memset, sync, stream, nvtx, api)",
                 names ? "the activity kinds" : "ARGUS_ACTIVITY_KINDS", e, (int)n, p);
      return AG_HOST_EINVAL;
    }
    want[k] = 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

/* NVTX's calls reach CUPTI through NVTX_INJECTION64_PATH (read at the
 * harness's first NVTX call): this CUPTI library's path unless the
 * variable names another already. */
static void nvtx_injection(ag_act *a) {
  const char *cur = getenv("NVTX_INJECTION64_PATH");
  Dl_info di;
  if (cur && *cur) {
    snprintf(a->nvtx_injection, sizeof a->nvtx_injection, "%s", cur);
    return;
  }
  if (!dladdr(*(void **)&a->cuptiSubscribe, &di) || !di.dli_fname || !*di.dli_fname)
    return; /* the evidence's nvtx.injection stays empty: markers will not come */
  snprintf(a->nvtx_injection, sizeof a->nvtx_injection, "%s", di.dli_fname);
  a->nvtx_ours = setenv("NVTX_INJECTION64_PATH", a->nvtx_injection, 0) == 0;
}

static int load(ag_act *a, char *err, size_t errlen) {
  if (!(a->lib = ag__cupti_lib("the activity trace", err, errlen)))
    return AG_HOST_ENODEV;
#define AG__LOAD(fn)                                                           \
  *(void **)(&a->fn) = dlsym(a->lib, #fn);                                     \
  if (!a->fn) {                                                                \
    ag__cupti_lacks("the activity trace", #fn, err, errlen);                   \
    return AG_HOST_ENODEV;                                                     \
  }
  AG_ACT_FUNCS(AG__LOAD)
#undef AG__LOAD
  return 0;
}

int ag_act_open(ag_act **out, const char *names, char *err, size_t errlen) {
  *out = NULL;
  if (g_act) {
    ag__seterr(err, errlen, "an activity collection is already open in this process");
    return AG_HOST_EBUSY;
  }
  ag_act *a = calloc(1, sizeof *a);
  if (!a) {
    ag__seterr(err, errlen, "out of memory");
    return AG_HOST_ENOMEM;
  }
  pthread_mutex_init(&a->mu, NULL);
  int rc;
  void *h = NULL;
  if ((rc = load(a, err, errlen)))
    goto out;
  rc = ag__cupti_subscribe((void *)a->cuptiSubscribe, &h, "the activity trace", err, errlen);
  a->sub = h;
  if (rc)
    goto out;
  a->subscribed = 1;
  a->cuptiGetVersion(&a->version);
  int want[RK_N];
  if ((rc = parse_kinds(names, want, err, errlen)))
    goto out;
  for (; a->nspare < NSPARE; a->nspare++)
    if (!(a->spare[a->nspare] = zeroed_buffer()))
      break;
  uint8_t one = 1;
  size_t sz = sizeof one;
  a->zeroed = a->cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz,
                                           &one) == CUPTI_SUCCESS;
  g_act = a;
  CUptiResult r = a->cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
  if (r != CUPTI_SUCCESS) {
    rc = AG__CUPTI_FAIL(a, r, "cuptiActivityRegisterCallbacks", err, errlen);
    goto out;
  }
  a->registered = 1;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    if (!want[kind_rk[i]])
      continue;
    if ((r = a->cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS) {
      char call[96];
      snprintf(call, sizeof call, "cuptiActivityEnable(%s)", kind_names[i]);
      rc = AG__CUPTI_FAIL(a, r, call, err, errlen);
      goto out;
    }
    a->enabled[kind_rk[i]] = 1;
  }
  if (a->enabled[RK_MARKER])
    nvtx_injection(a);
  a->opened_ts = ag_act_now(a);
  *out = a;
out:
  if (rc)
    ag_act_close(a);
  return rc;
}

uint64_t ag_act_now(const ag_act *a) {
  uint64_t t = 0;
  if (a && a->cuptiGetTimestamp && a->cuptiGetTimestamp(&t) != CUPTI_SUCCESS)
    t = 0;
  return t;
}

int ag_act_flush(ag_act *a, char *err, size_t errlen) {
  CUptiResult r = a->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS)
    return AG__CUPTI_FAIL(a, r, "cuptiActivityFlushAll", err, errlen);
  return 0;
}

size_t ag_act_records(const ag_act *a) { return a ? a->nrecs : 0; }

size_t ag_act_kernels(const ag_act *a, const char *name) {
  size_t n = 0;
  for (size_t i = 0; a && i < a->nrecs; i++)
    n += a->recs[i].kind == RK_KERNEL && (!name || !strcmp(a->recs[i].name, name));
  return n;
}

int ag_act_kernel_span(const ag_act *a, const char *name, size_t i, uint64_t *start,
                       uint64_t *end) {
  *start = *end = 0;
  for (size_t k = 0; a && k < a->nrecs; k++) {
    const rec *r = &a->recs[k];
    if (r->kind == RK_KERNEL && !strcmp(r->name, name) && i-- == 0) {
      *start = r->start, *end = r->end;
      return 1;
    }
  }
  return 0;
}

static int cmp_rec(const void *x, const void *y) {
  const rec *a = x, *b = y;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  return (a->corr > b->corr) - (a->corr < b->corr);
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

/* The kernels' correlation IDs, sorted (a launch call is written when a
 * kernel carries its ID). */
static uint32_t *kernel_corrs(const rec *r, size_t n) {
  uint32_t *c = malloc((n + 1) * sizeof *c);
  size_t k = 0;
  for (size_t i = 0; c && i < n; i++)
    if (r[i].kind == RK_KERNEL)
      c[k++] = r[i].corr;
  if (c)
    qsort(c, k, sizeof *c, cmp_u32);
  return c;
}

void ag_act_json(const ag_act *a, ag_jb *j) {
  size_t nk[RK_N] = {0};
  char kl[96] = "";
  for (int i = 0, n = 0; i < RK_N; i++)
    if (a->enabled[i])
      n += snprintf(kl + n, sizeof kl - (size_t)n, "%s\"%s\"", n ? "," : "", rk_name[i]);
  for (size_t i = 0; i < a->nrecs; i++)
    nk[a->recs[i].kind]++;
  ag_jb_printf(j, "\"cupti_version\":%u,\"clock\":\"cupti\",\"opened_ts\":%llu,"
                  "\"subscriber\":\"argus (the process's one CUPTI subscriber)\","
                  "\"zeroed_buffers\":%s,\"kinds\":[%s],\"buffers\":%llu,\"buffer_bytes\":%u,\"bytes_used\":%llu,"
                  "\"dropped_records\":%llu,\"lost_records\":%d,\"other_records\":%llu,"
                  "\"counts\":{\"kernel\":%zu,\"memcpy\":%zu,\"memset\":%zu,\"sync\":%zu,"
                  "\"stream\":%zu,\"nvtx\":%zu,\"api\":%zu},",
               a->version, (unsigned long long)a->opened_ts, a->zeroed ? "true" : "false",
               kl, (unsigned long long)a->buffers,
               BUF_BYTES, (unsigned long long)a->bytes_used, (unsigned long long)a->dropped,
               a->oom, (unsigned long long)a->other_kinds, nk[0], nk[1], nk[2], nk[3], nk[4], nk[5],
               nk[RK_API]);
  if (a->enabled[RK_MARKER]) {
    ag_jb_puts(j, "\"nvtx\":{\"injection\":");
    ag_jb_str(j, a->nvtx_injection);
    ag_jb_printf(j, ",\"set_by_argus\":%s},", a->nvtx_ours ? "true" : "false");
  }
  ag_jb_puts(j, "\"records\":[");
  rec *s = a->nrecs ? malloc(a->nrecs * sizeof *s) : NULL;
  if (a->nrecs && !s) {
    j->oom = 1;
    return;
  }
  if (s) {
    memcpy(s, a->recs, a->nrecs * sizeof *s);
    qsort(s, a->nrecs, sizeof *s, cmp_rec);
  }
  uint32_t *kc = a->enabled[RK_API] ? kernel_corrs(s, a->nrecs) : NULL;
  if (a->enabled[RK_API] && !kc) {
    free(s);
    j->oom = 1;
    return;
  }
  for (size_t i = 0, nk0 = nk[RK_KERNEL], out = 0; i < a->nrecs; i++) {
    const rec *r = &s[i];
    if (r->kind == RK_API) { /* a launch call: only those that made a kernel */
      if (!bsearch(&r->corr, kc, nk0, sizeof *kc, cmp_u32))
        continue;
      ag_jb_printf(j, "%s{\"kind\":\"api\",\"corr\":%u,\"start\":%llu,\"end\":%llu,"
                      "\"api\":\"%s\",\"cbid\":%u,\"pid\":%u,\"tid\":%u}",
                   out++ ? ",\n" : "\n", r->corr, (unsigned long long)r->start,
                   (unsigned long long)r->end, r->flag ? "driver" : "runtime", r->event, r->pid,
                   r->tid);
      continue;
    }
    if (r->kind == RK_MARKER) { /* a host-side NVTX marker: no stream, no correlation */
      uint32_t f = r->flag;
      ag_jb_printf(j, "%s{\"kind\":\"nvtx\",\"id\":%u,\"marker\":\"%s\",\"ts\":%llu,\"pid\":%u,"
                      "\"tid\":%u,\"name\":",
                   out++ ? ",\n" : "\n", r->marker_id,
                   f & CUPTI_ACTIVITY_FLAG_MARKER_START   ? "start"
                   : f & CUPTI_ACTIVITY_FLAG_MARKER_END ? "end"
                                                        : "instant",
                   (unsigned long long)r->start, r->pid, r->tid);
      if (r->name)
        ag_jb_str(j, r->name);
      else
        ag_jb_puts(j, "null");
      ag_jb_puts(j, ",\"domain\":");
      if (r->domain)
        ag_jb_str(j, r->domain);
      else
        ag_jb_puts(j, "null");
      ag_jb_puts(j, "}");
      continue;
    }
    ag_jb_printf(j, "%s{\"kind\":\"%s\",\"corr\":%u,\"stream\":%u,\"context\":%u",
                 out++ ? ",\n" : "\n",
                 rk_name[r->kind], r->corr, r->stream, r->context);
    if (r->kind != RK_STREAM)
      ag_jb_printf(j, ",\"start\":%llu,\"end\":%llu", (unsigned long long)r->start,
                   (unsigned long long)r->end);
    switch (r->kind) {
    case RK_KERNEL:
      ag_jb_puts(j, ",\"name\":");
      ag_jb_str(j, r->name);
      ag_jb_printf(j, ",\"device\":%u,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],"
                      "\"cluster\":[%d,%d,%d],\"registers\":%u,\"static_smem\":%d,"
                      "\"dynamic_smem\":%d,\"local_per_thread\":%u,\"graph\":%u,"
                      "\"graph_node\":%llu}",
                   r->device, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1],
                   r->block[2], r->cluster[0], r->cluster[1], r->cluster[2], r->regs,
                   r->static_smem, r->dynamic_smem, r->local_per_thread, r->graph,
                   (unsigned long long)r->graph_node);
      break;
    case RK_MEMCPY:
      ag_jb_printf(j, ",\"device\":%u,\"bytes\":%llu,\"copy_kind\":%u,\"src_kind\":%u,"
                      "\"dst_kind\":%u,\"graph\":%u,\"graph_node\":%llu}",
                   r->device, (unsigned long long)r->bytes, r->copy_kind, r->src_kind,
                   r->dst_kind, r->graph, (unsigned long long)r->graph_node);
      break;
    case RK_MEMSET:
      ag_jb_printf(j, ",\"device\":%u,\"bytes\":%llu,\"value\":%u,\"graph\":%u,"
                      "\"graph_node\":%llu}",
                   r->device, (unsigned long long)r->bytes, r->value, r->graph,
                   (unsigned long long)r->graph_node);
      break;
    case RK_SYNC:
      ag_jb_printf(j, ",\"sync_type\":%u,\"event\":%u}", r->sync_type, r->event);
      break;
    case RK_STREAM:
      ag_jb_printf(j, ",\"priority\":%u,\"flag\":%u}", r->priority, r->flag);
      break;
    default:
      break;
    }
  }
  free(s);
  free(kc);
  ag_jb_puts(j, "]");
}

void ag_act_close(ag_act *a) {
  if (!a)
    return;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (a->enabled[kind_rk[i]])
      a->cuptiActivityDisable(kinds[i]);
  if (a->registered)
    a->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (a->subscribed)
    a->cuptiUnsubscribe(a->sub);
  if (g_act == a) {
    pthread_mutex_lock(&a->mu);
    g_act = NULL; /* a buffer completed later is freed unread */
    pthread_mutex_unlock(&a->mu);
  }
  for (int i = 0; i < a->nspare; i++)
    free(a->spare[i]);
  for (size_t i = 0; i < a->nrecs; i++)
    free(a->recs[i].name), free(a->recs[i].domain);
  free(a->recs);
  pthread_mutex_destroy(&a->mu);
  free(a);
}
