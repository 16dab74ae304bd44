/*
 * exec.c — the device half of `argus run` (docs/run.md): a bound kernel
 * (bind.c) runs on the GPU through libargus_host, against a reference, and
 * is timed.
 *
 * Inputs: every tensor is filled with seeded values in its declared type
 * (floats uniform in [-0.5, 0.5) or the amplitude asked for, rounded to bf16/f16; integers in 0..15),
 * outputs included, so a kernel that leaves elements unwritten mismatches.
 * The launch is watched: the host polls an event behind it and gives up
 * after the timeout (AG_ETIMEOUT) rather than hanging with the kernel; a
 * fault is the driver's error in words (AG_ECUDA).
 *
 * References: "interp" runs the program itself on the CPU (interp.c) over
 * copies of the inputs and compares every tensor; for GEMM-shaped kernels
 * (C = A·Bᵀ) "cpu" sums in double on the host and "cublas" is cublasGemmEx
 * with f32 accumulation (libcublas opened at run time). Timing: warm-up launches, then each sample behind a memset of
 * a buffer twice the L2 size (so no sample starts with its inputs in L2),
 * between two events; median, min, max and the 10th/90th percentiles; the
 * SM and memory clocks as NVML reads them after the samples.
 *
 * No CUDA header here (the dependency rule): the driver, cuBLAS and NVML
 * entry points are declared with plain C types and looked up with dlsym.
 */
#include "argus/host.h"
#include "argus/tile_run.h"
#include "run_int.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long devptr;
typedef struct api {
  void *cuda, *cublas, *nvml;
  int (*alloc)(devptr *, size_t);
  int (*mfree)(devptr);
  int (*htod)(devptr, const void *, size_t);
  int (*dtoh)(void *, devptr, size_t);
  int (*memset8)(devptr, unsigned char, size_t, void *);
  int (*ev_create)(void **, unsigned);
  int (*ev_record)(void *, void *);
  int (*ev_query)(void *);
  int (*ev_sync)(void *);
  int (*ev_elapsed)(float *, void *, void *);
  int (*ev_destroy)(void *);
  int (*attr)(int *, int, int);
  int (*err_name)(int, const char **);
  int (*dev_name)(char *, int, int);
  /* cuTensorMapEncodeTiled (CUDA 12): map, data type, rank, address, dims, strides, box,
   * element strides, interleave, swizzle, L2 promotion, out-of-bounds fill */
  int (*tmap_encode)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                     const unsigned *, const unsigned *, int, int, int, int);
  /* cuBLAS */
  int (*blas_create)(void **);
  int (*blas_destroy)(void *);
  int (*gemm_ex)(void *, int, int, int, int, int, const void *, const void *, int, int,
                 const void *, int, int, const void *, void *, int, int, int, int);
  /* NVML */
  int (*nvml_init)(void);
  int (*nvml_handle)(unsigned, void **);
  int (*nvml_clock)(void *, int, unsigned *);
  int (*nvml_max_clock)(void *, int, unsigned *);
} api;

#define CU_OK 0
#define CU_NOT_READY 600
#define CU_ATTR_CLOCK_RATE 13
#define CU_ATTR_MEM_CLOCK_RATE 36
#define CU_ATTR_L2_CACHE_SIZE 38
#define CU_FUNC_MAX_DYN_SMEM 8

static int load_api(api *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!a->cuda) {
    snprintf(err, errlen, "cannot open the CUDA driver (libcuda.so.1): %s", dlerror());
    return AG_ENODEV;
  }
#define SYM(field, name) *(void **)&a->field = dlsym(a->cuda, name)
  SYM(alloc, "cuMemAlloc_v2");
  SYM(mfree, "cuMemFree_v2");
  SYM(htod, "cuMemcpyHtoD_v2");
  SYM(dtoh, "cuMemcpyDtoH_v2");
  SYM(memset8, "cuMemsetD8Async");
  SYM(ev_create, "cuEventCreate");
  SYM(ev_record, "cuEventRecord");
  SYM(ev_query, "cuEventQuery");
  SYM(ev_sync, "cuEventSynchronize");
  SYM(ev_elapsed, "cuEventElapsedTime");
  SYM(ev_destroy, "cuEventDestroy_v2");
  SYM(attr, "cuDeviceGetAttribute");
  SYM(err_name, "cuGetErrorName");
  SYM(dev_name, "cuDeviceGetName");
  SYM(tmap_encode, "cuTensorMapEncodeTiled"); /* checked where a kernel has tensor maps */
#undef SYM
  if (!a->alloc || !a->mfree || !a->htod || !a->dtoh || !a->memset8 || !a->ev_create ||
      !a->ev_record || !a->ev_query || !a->ev_sync || !a->ev_elapsed || !a->ev_destroy ||
      !a->attr || !a->err_name || !a->dev_name) {
    snprintf(err, errlen, "the CUDA driver lacks an entry point argus run needs");
    return AG_ENODEV;
  }
  a->nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (a->nvml) {
    *(void **)&a->nvml_init = dlsym(a->nvml, "nvmlInit_v2");
    *(void **)&a->nvml_handle = dlsym(a->nvml, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&a->nvml_clock = dlsym(a->nvml, "nvmlDeviceGetClockInfo");
    *(void **)&a->nvml_max_clock = dlsym(a->nvml, "nvmlDeviceGetMaxClockInfo");
    if (!a->nvml_init || !a->nvml_handle || !a->nvml_clock || a->nvml_init() != 0)
      a->nvml_clock = NULL;
  }
  return 0;
}

static int load_cublas(api *a, char *err, size_t errlen) {
  if (a->gemm_ex)
    return 0;
  a->cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!a->cublas)
    a->cublas = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (!a->cublas) {
    snprintf(err, errlen, "cannot open cuBLAS (libcublas.so.13): %s (add the CUDA toolkit's "
                          "lib64 to LD_LIBRARY_PATH, or use --ref cpu)", dlerror());
    return AG_EUNSUPPORTED;
  }
  *(void **)&a->blas_create = dlsym(a->cublas, "cublasCreate_v2");
  *(void **)&a->blas_destroy = dlsym(a->cublas, "cublasDestroy_v2");
  *(void **)&a->gemm_ex = dlsym(a->cublas, "cublasGemmEx");
  if (!a->blas_create || !a->blas_destroy || !a->gemm_ex) {
    a->gemm_ex = NULL;
    snprintf(err, errlen, "cuBLAS lacks cublasGemmEx");
    return AG_EUNSUPPORTED;
  }
  return 0;
}

static int cu_err(api *a, ag_tile_exec_result *r, int cr, const char *what) {
  const char *name = "?";
  a->err_name(cr, &name);
  snprintf(r->err, sizeof r->err, "%s failed: %s (%d)", what, name ? name : "?", cr);
  return AG_ECUDA;
}

/* ----------------------------------------------------------------- timing */
static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}
static void summarize(double *ms, int n, uint64_t flops, uint64_t bytes, ag_tile_timing *t) {
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  t->samples = n;
  t->min_ms = ms[0];
  t->max_ms = ms[n - 1];
  t->median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  t->p10_ms = ms[n / 10];
  t->p90_ms = ms[n - 1 - n / 10];
  t->tflops = flops ? (double)flops / (t->median_ms * 1e-3) * 1e-12 : 0;
  t->gbps = bytes ? (double)bytes / (t->median_ms * 1e-3) * 1e-9 : 0;
}

typedef struct launcher {
  api *a;
  ag_host *h;
  ag_host_kernel *k;            /* the tile kernel, or NULL for cuBLAS */
  const ag_tile_bound *b;
  void **args;
  void *blas;                   /* cuBLAS: handle and the GEMM's operands */
  devptr A, B, C;
  int M, N, K, abtype, ctype;
} launcher;

static int launch_once(launcher *l, ag_tile_exec_result *r) {
  if (l->k) {
    const ag_tile_lkernel *k = l->b->k;
    ag_host_dim g = {l->b->grid[0], l->b->grid[1], l->b->grid[2]};
    ag_host_dim bl = {(unsigned)k->block[0], (unsigned)k->block[1], (unsigned)k->block[2]};
    if (ag_host_launch(l->k, g, bl, (unsigned)k->smem_bytes, NULL, l->args)) {
      snprintf(r->err, sizeof r->err, "%s", ag_host_errmsg(l->h));
      return AG_ECUDA;
    }
    return 0;
  }
  /* column-major: C^T (N x M) = B (K x N)^T · A (K x M) */
  float one = 1.0f, zero = 0.0f;
  int st = l->a->gemm_ex(l->blas, 1 /* T */, 0 /* N */, l->N, l->M, l->K, &one, (void *)l->B,
                         l->abtype, l->K, (void *)l->A, l->abtype, l->K, &zero, (void *)l->C,
                         l->ctype, l->N, 68 /* CUBLAS_COMPUTE_32F */, -1 /* default algo */);
  if (st) {
    snprintf(r->err, sizeof r->err, "cublasGemmEx failed: status %d", st);
    return AG_ECUDA;
  }
  return 0;
}

/* Waits for ev at most timeout_s: the watchdog. */
static int wait_event(api *a, void *ev, double timeout_s, const char *what,
                      ag_tile_exec_result *r) {
  struct timespec t0, t, nap = {0, 200000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int cr = a->ev_query(ev);
    if (cr == CU_OK)
      return 0;
    if (cr != CU_NOT_READY)
      return cu_err(a, r, cr, what);
    clock_gettime(CLOCK_MONOTONIC, &t);
    double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9;
    if (el > timeout_s) {
      snprintf(r->err, sizeof r->err,
               "%s did not finish within %.0f s (it may hang: a barrier some threads never "
               "reach, a loop that does not end; --timeout S waits longer)",
               what, timeout_s);
      return AG_ETIMEOUT;
    }
    nanosleep(&nap, NULL);
  }
}

static int bench(launcher *l, const ag_tile_exec_opts *o, devptr flush, size_t flush_bytes,
                 uint64_t flops, uint64_t bytes, ag_tile_timing *t, ag_tile_exec_result *r) {
  api *a = l->a;
  int n = o->samples > 0 ? o->samples : 50, warm = o->warmup > 0 ? o->warmup : 5, rc = 0, cr;
  double *ms = ag_calloc((size_t)n, sizeof *ms);
  void *e0 = NULL, *e1 = NULL;
  if (!ms)
    return AG_ENOMEM;
  if ((cr = a->ev_create(&e0, 0)) || (cr = a->ev_create(&e1, 0))) {
    rc = cu_err(a, r, cr, "cuEventCreate");
    goto out;
  }
  for (int i = 0; i < warm && !rc; i++)
    rc = launch_once(l, r);
  for (int i = 0; i < n && !rc; i++) {
    if ((cr = a->memset8(flush, (unsigned char)i, flush_bytes, NULL)) ||
        (cr = a->ev_record(e0, NULL))) {
      rc = cu_err(a, r, cr, "flushing L2");
      break;
    }
    rc = launch_once(l, r);
    if (!rc && (cr = a->ev_record(e1, NULL)))
      rc = cu_err(a, r, cr, "cuEventRecord");
    if (!rc)
      rc = wait_event(a, e1, o->timeout_s > 0 ? o->timeout_s : 60, "a timed launch", r);
    float f = 0;
    if (!rc && (cr = a->ev_elapsed(&f, e0, e1)))
      rc = cu_err(a, r, cr, "cuEventElapsedTime");
    ms[i] = f;
  }
  if (!rc)
    summarize(ms, n, flops, bytes, t);
out:
  if (e0)
    a->ev_destroy(e0);
  if (e1)
    a->ev_destroy(e1);
  ag_free(ms);
  return rc;
}

/* ------------------------------------------------------------------ exec */
static int cuda_dtype(const char *dt) {
  return !strcmp(dt, "bf16") ? 14 : !strcmp(dt, "f16") ? 2 : 0; /* CUDA_R_16BF, _16F, _32F */
}

void ag_tile_exec_result_release(ag_tile_exec_result *r) {
  for (int i = 0; r->tensors && i < r->ntensors; i++)
    ag_free(r->tensors[i]);
  ag_free(r->tensors);
  r->tensors = NULL;
  r->ntensors = 0;
}

/* The driver's CUtensorMapDataType of a DSL type (cuda.h), or -1. */
static int tmap_dtype(const char *dt) {
  static const struct {
    const char *name;
    int v;
  } map[] = {{"u8", 0},  {"i8", 0},  {"u16", 1}, {"i16", 1}, {"u32", 2}, {"i32", 3},
             {"u64", 4}, {"i64", 5}, {"f16", 6}, {"f32", 7}, {"f64", 8}, {"bf16", 9}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(map[i].name, dt))
      return map[i].v;
  return -1;
}

/* Encodes tensor map tm (a 128-byte CUtensorMap in out) over the device
 * tensor at d: the layout module's rules first (a clear error naming the
 * field), then cuTensorMapEncodeTiled (docs/run.md, "TMA"). */
static int tmap_build(api *a, const ag_tile_bound *b, const ag_tile_ltmap *tm, devptr d,
                      void *out, ag_tile_exec_result *r) {
  const ag_tile_lparam *p = &b->k->params[tm->tensor];
  int dt = tmap_dtype(p->dtype);
  ag_tma_map m;
  memset(&m, 0, sizeof m);
  m.rank = tm->rank;
  m.elem_bytes = ag__dt_size(ag__dt_lookup(p->dtype));
  m.elem_float = ag__dt_is_float(ag__dt_lookup(p->dtype));
  m.gaddr = d;
  m.swizzle = (ag_swz_mode)tm->swizzle;
  uint64_t pitch = (uint64_t)m.elem_bytes;
  for (int i = 0; i < tm->rank; i++) { /* TMA dimension 0 is the tensor's last */
    m.dim[i] = b->dims[tm->tensor * AG_TILE_RUN_MAXRANK + tm->rank - 1 - i];
    if (i)
      m.stride[i - 1] = pitch;
    pitch *= m.dim[i];
    m.box[i] = (uint32_t)tm->box[tm->rank - 1 - i];
    m.estride[i] = 1;
  }
  ag_arena ar;
  ag_arena_init(&ar, 0);
  ag_layout_ctx lc;
  ag_layout_ctx_init(&lc, &ar);
  int rc = dt < 0 ? AG_EINVAL : ag_tma_map_check(&lc, &m);
  if (rc)
    snprintf(r->err, sizeof r->err, "tensor map '%s' of '%s': %s", tm->name, p->name,
             dt < 0 ? "TMA has no element type for it" : ag_str_cstr(&lc.err));
  ag_layout_ctx_release(&lc);
  ag_arena_release(&ar);
  if (rc)
    return rc;
  if (!a->tmap_encode) {
    snprintf(r->err, sizeof r->err,
             "the CUDA driver lacks cuTensorMapEncodeTiled (CUDA 12 or later is needed for "
             "tensor map '%s')", tm->name);
    return AG_ENODEV;
  }
  int swz = tm->swizzle == 128 ? 3 : tm->swizzle == 64 ? 2 : tm->swizzle == 32 ? 1 : 0;
  int cr = a->tmap_encode(out, dt, (unsigned)m.rank, (void *)(uintptr_t)d, m.dim, m.stride, m.box,
                          m.estride, 0 /* no interleave */, swz, 2 /* L2 promotion 128B */,
                          0 /* zeros outside the tensor */);
  if (cr) {
    char what[160];
    snprintf(what, sizeof what, "cuTensorMapEncodeTiled for tensor map '%s'", tm->name);
    cu_err(a, r, cr, what);
    return AG_EINVAL; /* the context is sound: the caller frees as usual */
  }
  return 0;
}

int ag_tile_run_exec(const ag_tile_bound *b, const char *ptx, const ag_tile_exec_opts *o,
                     ag_tile_exec_result *r) {
  memset(r, 0, sizeof *r);
  r->compared_param = -1;
  const ag_tile_lkernel *k = b->k;
  int np = k->nparams, rc = 0, cr;
  api a;
  ag_host *h = NULL;
  ag_host_module *mod = NULL;
  ag_host_kernel *hk = NULL;
  void **host = ag_calloc((size_t)np + 1, sizeof *host);
  devptr *dev = ag_calloc((size_t)np + 1, sizeof *dev);
  void **args = ag_calloc((size_t)np + (size_t)k->ntmaps + 1, sizeof *args);
  /* CUtensorMap parameters: 128 bytes, 64-byte aligned */
  typedef struct {
    _Alignas(64) unsigned long long opaque[16];
  } tmap_t;
  tmap_t *tmaps = ag_calloc((size_t)k->ntmaps + 1, sizeof *tmaps);
  double *want = NULL;
  void *out = NULL, *ev = NULL, *blas = NULL;
  devptr flush = 0, cref = 0;
  double timeout = o->timeout_s > 0 ? o->timeout_s : 60;
  int ia, ib, ic, gemm = ag_tile_run_gemm_shape(k, &ia, &ib, &ic) == 0;
  if (!host || !dev || !args || !tmaps) {
    rc = AG_ENOMEM;
    goto out;
  }
  uint64_t work = (uint64_t)b->grid[0] * b->grid[1] * b->grid[2] *
                  (uint64_t)(k->block[0] * k->block[1] * k->block[2]);
  int interp = o->ref == AG_TILE_REF_INTERP || (o->ref == AG_TILE_REF_AUTO && !gemm);
  if (interp && (!o->prog || (o->ref == AG_TILE_REF_AUTO && work > AG_TILE_INTERP_MAX_THREADS))) {
    snprintf(r->err, sizeof r->err,
             o->prog ? "no reference for kernel '%s' at this size: the value reference runs "
                       "small grids (%llu threads here, at most %d; --ref interp forces it)"
                     : "no reference for kernel '%s': no program for the value reference%.0llu%.0d",
             k->name, (unsigned long long)work, AG_TILE_INTERP_MAX_THREADS);
    rc = AG_EUNSUPPORTED;
    goto out;
  }
  if ((rc = load_api(&a, r->err, sizeof r->err)))
    goto out;
  rc = ag_host_open(&h);
  if (rc) {
    snprintf(r->err, sizeof r->err, "%s", h ? ag_host_errmsg(h) : "cannot open the GPU");
    goto out;
  }
  int dev_ord = ag_host_device(h), v = 0;
  a.dev_name(r->device, (int)sizeof r->device, dev_ord);
  if (!a.attr(&v, CU_ATTR_CLOCK_RATE, dev_ord))
    r->sm_mhz_max = v / 1000;
  if (!a.attr(&v, CU_ATTR_MEM_CLOCK_RATE, dev_ord))
    r->mem_mhz_max = v / 1000;
  if (!a.attr(&v, CU_ATTR_L2_CACHE_SIZE, dev_ord))
    r->l2_bytes = v;
  if ((rc = ag_host_load_image(h, ptx, k->name, &mod)) || (rc = ag_host_kernel_get(mod, k->name, &hk)) ||
      (k->smem_bytes > 48 * 1024 &&
       (rc = ag_host_kernel_set_attr(hk, CU_FUNC_MAX_DYN_SMEM, (int)k->smem_bytes)))) {
    snprintf(r->err, sizeof r->err, "%s", ag_host_errmsg(h));
    goto out;
  }
  uint64_t seed = o->seed ? o->seed : 1, bytes_all = 0;
  for (int i = 0; i < np; i++) {
    if (k->params[i].kind == AG_TILE_PARAM_SIZE) {
      args[i] = &b->size_vals[i];
      continue;
    }
    bytes_all += b->bytes[i];
    if (!(host[i] = ag_malloc(b->bytes[i]))) {
      rc = AG_ENOMEM;
      goto out;
    }
    ag_tile_run_fill(k->params[i].dtype, host[i], b->bytes[i], &seed,
                     o->amplitude > 0 ? o->amplitude : 0.5);
    if ((cr = a.alloc(&dev[i], b->bytes[i])) || (cr = a.htod(dev[i], host[i], b->bytes[i]))) {
      rc = cu_err(&a, r, cr, "allocating and copying the inputs");
      goto out;
    }
    args[i] = &dev[i];
  }
  for (int i = 0; i < k->ntmaps; i++) {
    if ((rc = tmap_build(&a, b, &k->tmaps[i], dev[k->tmaps[i].tensor], &tmaps[i], r)))
      goto out;
    args[np + i] = &tmaps[i];
  }
  /* one launch, watched */
  launcher l = {&a, h, hk, b, args, NULL, 0, 0, 0, 0, 0, 0, 0, 0};
  if ((cr = a.ev_create(&ev, 2 /* CU_EVENT_DISABLE_TIMING */))) {
    rc = cu_err(&a, r, cr, "cuEventCreate");
    goto out;
  }
  if ((rc = launch_once(&l, r)))
    goto out;
  if ((cr = a.ev_record(ev, NULL))) {
    rc = cu_err(&a, r, cr, "cuEventRecord");
    goto out;
  }
  char what[160];
  snprintf(what, sizeof what, "kernel '%s'", k->name);
  if ((rc = wait_event(&a, ev, timeout, what, r)))
    goto out;
  if (o->keep_tensors) {
    if (!(r->tensors = ag_calloc((size_t)np + 1, sizeof *r->tensors))) {
      rc = AG_ENOMEM;
      goto out;
    }
    r->ntensors = np;
    for (int i = 0; i < np; i++) {
      if (!dev[i])
        continue;
      if (!(r->tensors[i] = ag_malloc(b->bytes[i]))) {
        rc = AG_ENOMEM;
        goto out;
      }
      if ((cr = a.dtoh(r->tensors[i], dev[i], b->bytes[i]))) {
        rc = cu_err(&a, r, cr, "copying the tensors back");
        goto out;
      }
    }
  }
  if (interp) { /* the value reference on copies of the inputs, against every tensor */
    void **iwant = ag_calloc((size_t)np + 1, sizeof *iwant), **igot = ag_calloc((size_t)np + 1, sizeof *igot);
    int irc = iwant && igot ? 0 : AG_ENOMEM;
    for (int i = 0; !irc && i < np; i++) {
      if (!dev[i])
        continue;
      if (!(iwant[i] = ag_malloc(b->bytes[i])) || !(igot[i] = ag_malloc(b->bytes[i]))) {
        irc = AG_ENOMEM;
        break;
      }
      memcpy(iwant[i], host[i], b->bytes[i]);
      if ((cr = a.dtoh(igot[i], dev[i], b->bytes[i])))
        irc = cu_err(&a, r, cr, "copying the tensors back");
    }
    if (!irc)
      irc = ag_tile_interp(o->prog, b, o->defines, o->ndefines, iwant, r->err, sizeof r->err);
    if (!irc) {
      ag_tile_run_compare(b, igot, iwant, r);
      r->ref_used = "interp";
    }
    for (int i = 0; i < np; i++) {
      if (iwant)
        ag_free(iwant[i]);
      if (igot)
        ag_free(igot[i]);
    }
    ag_free(iwant);
    ag_free(igot);
    if (irc) {
      rc = irc;
      goto out;
    }
  }
  uint64_t M = 0, N = 0, K = 0;
  if (gemm) {
    M = b->dims[ia * AG_TILE_RUN_MAXRANK];
    K = b->dims[ia * AG_TILE_RUN_MAXRANK + 1];
    N = b->dims[ib * AG_TILE_RUN_MAXRANK];
  }
  ag_tile_ref ref = o->ref;
  if (ref == AG_TILE_REF_AUTO)
    ref = M * N * K <= ((uint64_t)1 << 30) ? AG_TILE_REF_CPU : AG_TILE_REF_CUBLAS;
  int use_blas = ref == AG_TILE_REF_CUBLAS || (o->bench && gemm);
  if (use_blas && gemm && M < (1u << 31) && N < (1u << 31)) {
    int brc = load_cublas(&a, r->err, sizeof r->err);
    if (!brc && (cr = a.blas_create(&blas))) {
      snprintf(r->err, sizeof r->err, "cublasCreate failed: status %d", cr);
      brc = AG_ECUDA;
    }
    if (!brc && (cr = a.alloc(&cref, b->bytes[ic])))
      brc = cu_err(&a, r, cr, "allocating the cuBLAS result");
    if (brc && ref == AG_TILE_REF_CUBLAS) {
      rc = brc;
      goto out;
    }
    if (brc) /* only the side-by-side timing is lost; say so */
      r->err[0] = 0, blas = NULL;
  }
  launcher lb = {&a, h, NULL, b, NULL, blas, 0, 0, cref, (int)M, (int)N, (int)K, 0, 0};
  if (gemm) {
    lb.A = dev[ia];
    lb.B = dev[ib];
    lb.abtype = cuda_dtype(k->params[ia].dtype);
    lb.ctype = cuda_dtype(k->params[ic].dtype);
  }
  if (ref != AG_TILE_REF_NONE && !interp) {
    uint64_t nel = M * N;
    const char *cdt = k->params[ic].dtype;
    ag__dt ct = ag__dt_lookup(cdt);
    int esz = cdt[0] == 'f' && cdt[1] == '3' ? 4 : 2;
    if (!(out = ag_malloc(nel * (uint64_t)esz)) || !(want = ag_malloc(nel * sizeof *want))) {
      rc = AG_ENOMEM;
      goto out;
    }
    if ((cr = a.dtoh(out, dev[ic], nel * (uint64_t)esz))) {
      rc = cu_err(&a, r, cr, "copying the result back");
      goto out;
    }
    ag__dt adt = ag__dt_lookup(k->params[ia].dtype);
    if (ref == AG_TILE_REF_CPU) {
      r->ref_used = "cpu";
      for (uint64_t m = 0; m < M; m++)
        for (uint64_t n = 0; n < N; n++) {
          double s = 0;
          for (uint64_t kk = 0; kk < K; kk++)
            s += ag__tile_elem_value(adt, host[ia], m * K + kk) * ag__tile_elem_value(adt, host[ib], n * K + kk);
          want[m * N + n] = s;
        }
    } else {
      r->ref_used = "cublas";
      void *tmp = ag_malloc(nel * (uint64_t)esz);
      if (!tmp) {
        rc = AG_ENOMEM;
        goto out;
      }
      rc = launch_once(&lb, r);
      if (!rc && (cr = a.ev_record(ev, NULL)))
        rc = cu_err(&a, r, cr, "cuEventRecord");
      if (!rc)
        rc = wait_event(&a, ev, timeout, "cuBLAS", r);
      if (!rc && (cr = a.dtoh(tmp, cref, nel * (uint64_t)esz)))
        rc = cu_err(&a, r, cr, "copying cuBLAS's result back");
      for (uint64_t i = 0; !rc && i < nel; i++)
        want[i] = ag__tile_elem_value(ct, tmp, i);
      ag_free(tmp);
      if (rc)
        goto out;
    }
    ag_tile_run_tolerance(cdt, &r->atol, &r->rtol);
    if (ref == AG_TILE_REF_CUBLAS) { /* two f32 sums in different orders */
      r->atol *= 2;
      r->rtol *= 2;
    }
    r->compared_param = ic;
    r->nelems = nel;
    for (uint64_t i = 0; i < nel; i++) {
      double g = ag__tile_elem_value(ct, out, i), w = want[i], e = fabs(g - w);
      if (!(e <= r->atol + r->rtol * fabs(w))) {
        if (!r->nbad++) {
          r->bad_rank = 2;
          r->first_bad[0] = i / N;
          r->first_bad[1] = i % N;
          r->got = g;
          r->want = w;
        }
      }
      if (e > r->max_err || e != e)
        r->max_err = e;
    }
  }
  if (o->bench) {
    size_t fb = (size_t)(r->l2_bytes > 0 ? r->l2_bytes : 64 << 20) * 2;
    if ((cr = a.alloc(&flush, fb))) {
      rc = cu_err(&a, r, cr, "allocating the L2 flush buffer");
      goto out;
    }
    uint64_t flops = o->flops ? o->flops : gemm ? 2 * M * N * K : 0;
    if ((rc = bench(&l, o, flush, fb, flops, bytes_all, &r->kernel, r)))
      goto out;
    if (blas && (rc = bench(&lb, o, flush, fb, flops,
                            b->bytes[ia] + b->bytes[ib] + b->bytes[ic], &r->cublas, r)))
      goto out;
    void *nd = NULL;
    unsigned mhz = 0;
    if (a.nvml_clock && !a.nvml_handle((unsigned)dev_ord, &nd)) {
      if (!a.nvml_clock(nd, 1 /* NVML_CLOCK_SM */, &mhz))
        r->sm_mhz = (int)mhz;
      if (!a.nvml_clock(nd, 2 /* NVML_CLOCK_MEM */, &mhz))
        r->mem_mhz = (int)mhz;
    }
  }
  rc = 0;
out:
  if (blas)
    a.blas_destroy(blas);
  if (ev)
    a.ev_destroy(ev);
  if (rc != AG_ETIMEOUT && rc != AG_ECUDA) { /* a faulted or busy context cannot free */
    for (int i = 0; i < np; i++)
      if (dev[i])
        a.mfree(dev[i]);
    if (flush)
      a.mfree(flush);
    if (cref)
      a.mfree(cref);
  }
  for (int i = 0; host && i < np; i++)
    ag_free(host[i]);
  ag_free(host);
  ag_free(dev);
  ag_free(args);
  ag_free(tmaps);
  ag_free(want);
  ag_free(out);
  if (rc != AG_ETIMEOUT) /* a hung kernel keeps the context: the process must exit */
    ag_host_close(h);
  if (rc)
    ag_tile_exec_result_release(r);
  return rc;
}
