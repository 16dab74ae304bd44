/*
 * fake_cuda.c — a stand-in CUDA driver for CPU tests of the multi-variant
 * worker (loaded through ARGUS_LIBCUDA): every entry point the host runtime
 * opens, "device memory" in host memory, kernels that do nothing except the
 * host runtime's clock calibration (which gets plausible numbers). It lets
 * the worker's protocol and failure isolation be tested without a GPU;
 * nothing here measures anything. fake_cuda_poison() makes every later
 * context synchronization fail, like a GPU fault.
 */
#include <cuda.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int poisoned;
/* FAKE_CUDA_LOG=FILE: every module load ("load <its first 8 bytes, printable>")
 * and every launch of a kernel in a traced run ("launch <descriptor launch>
 * enabled <0|1> cap <slots>") is appended to FILE, and so are the calibration
 * kernel's loads ("calibration load") and every unload ("unload").
 * FAKE_CUDA_RECORDS=N: each
 * warp of a launch whose descriptor records reports N records in its
 * metadata (count and max_count, exited), as the probe would. */
static void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_log(const char *fmt, ...) {
  const char *p = getenv("FAKE_CUDA_LOG");
  FILE *f = p && *p ? fopen(p, "a") : NULL;
  if (!f)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}
static unsigned char *fake_desc; /* the last traced module's descriptor */
/* the last mapping module's descriptor: a launch adds i to its slot i, as
 * the counters would (slot 0, the dropped executions, stays 0); bound with a
 * capacity below the slots the module needs (ARGUS_MAP_SLOTS), every count
 * goes to slot 0, as the variant's prologue sends it (src/ptx/xform_map.c) */
static unsigned char *fake_map;
void fake_cuda_poison(void);
void fake_cuda_poison(void) { poisoned = 1; }

#define OK return CUDA_SUCCESS
CUresult cuInit(unsigned f) { (void)f; OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; OK; }
CUresult cuDeviceGetCount(int *n) { *n = 1; OK; }
CUresult cuDeviceGet(CUdevice *d, int o) { *d = o; OK; }
CUresult cuDeviceGetName(char *n, int len, CUdevice d) {
  (void)d;
  strncpy(n, "Fake GPU", (size_t)len);
  OK;
}
/* an H200's figures where a collector reads them (the hardware counters'
 * peaks: docs/counters.md), 9 elsewhere */
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT        ? 132
       : a == CU_DEVICE_ATTRIBUTE_CLOCK_RATE                ? 1980000
       : a == CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE         ? 3201000
       : a == CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH   ? 6144
       : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR  ? 0
                                                            : 9;
  OK;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
  (void)d;
  memset(u, 0, sizeof *u);
  OK;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)(uintptr_t)0x1000;
  OK;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; OK; }
CUresult cuCtxSetCurrent(CUcontext c) { (void)c; OK; }
/* the last stream wait queued (host.c's gate): a synchronization while it is
 * still closed would wait forever on a real GPU, so here it fails */
static volatile uint32_t *gate_addr;
static uint32_t gate_expect;
CUresult cuCtxSynchronize(void) {
  if (gate_addr && *gate_addr < gate_expect)
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  return poisoned ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
/* __argus_map_slots of a cubin (ELF64: the symbol's 4 bytes in its
 * section), as the driver would expose it; 0 when there is none */
static uint32_t elf_map_slots(const unsigned char *e) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  uint32_t n = 0;
  if (memcmp(e, "\x7f" "ELF", 4) || e[4] != 2)
    return 0;
  memcpy(&shoff, e + 0x28, 8);
  memcpy(&shentsize, e + 0x3a, 2);
  memcpy(&shnum, e + 0x3c, 2);
  for (uint16_t i = 0; i < shnum; i++) {
    const unsigned char *sh = e + shoff + (uint64_t)i * shentsize;
    uint32_t type, link;
    uint64_t off, size, entsize;
    memcpy(&type, sh + 4, 4);
    if (type != 2) /* SHT_SYMTAB */
      continue;
    memcpy(&off, sh + 0x18, 8);
    memcpy(&size, sh + 0x20, 8);
    memcpy(&link, sh + 0x28, 4);
    memcpy(&entsize, sh + 0x38, 8);
    uint64_t stroff;
    memcpy(&stroff, e + shoff + (uint64_t)link * shentsize + 0x18, 8);
    for (uint64_t k = 0; entsize && k < size / entsize; k++) {
      const unsigned char *sym = e + off + k * entsize;
      uint32_t name;
      uint16_t shndx;
      uint64_t value, soff;
      memcpy(&name, sym, 4);
      memcpy(&shndx, sym + 6, 2);
      memcpy(&value, sym + 8, 8);
      if (strcmp((const char *)e + stroff + name, "__argus_map_slots"))
        continue;
      memcpy(&soff, e + shoff + (uint64_t)shndx * shentsize + 0x18, 8);
      memcpy(&n, e + soff + value, 4);
      return n;
    }
  }
  return 0;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  char head[9];
  for (int i = 0; i < 8; i++) {
    unsigned char c = ((const unsigned char *)image)[i];
    head[i] = c >= 32 && c < 127 ? (char)c : '.';
    if (!c) {
      head[i] = 0;
      break;
    }
  }
  head[8] = 0;
  if (strcmp(head, ".version") && strncmp(head, "\t.versi", 8)) /* not the calibration */
    fake_log("load %s", head);
  else
    fake_log("calibration load");
  /* holds the module's 32-byte descriptor at 0; a mapping variant's
   * (docs/attribution.md) at 64 and its slot count at 96 */
  *m = (CUmodule)calloc(1, 128);
  if (!*m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* PTX text (the stand-in variants) or a cubin (what observe compiles) */
  const char *need = strstr((const char *)image, "__argus_map_slots = ");
  uint32_t n = need ? (uint32_t)strtoul(need + 20, NULL, 10) : elf_map_slots(image);
  if (need || n) {
    memcpy((unsigned char *)*m + 96, &n, 4);
    ((unsigned char *)*m)[100] = 1;
  }
  OK;
}
CUresult cuModuleUnload(CUmodule m) {
  fake_log("unload");
  if ((unsigned char *)m == fake_desc)
    fake_desc = NULL;
  if ((unsigned char *)m + 64 == fake_map)
    fake_map = NULL;
  free(m);
  OK;
}
/* Every module holds "argus_calibrate" (2), one template kernel (3) and
 * answers any other plain name (1); a demangled spelling is no symbol. */
static const char fake_template[] = "_ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i";
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  if (strpbrk(name, "<>(): "))
    return CUDA_ERROR_NOT_FOUND;
  *f = (CUfunction)(uintptr_t)(!strcmp(name, "argus_calibrate") ? 2
                               : !strcmp(name, fake_template)  ? 3
                                                               : 1);
  OK;
}
CUresult cuModuleGetFunctionCount(unsigned *n, CUmodule m) {
  (void)m;
  *n = 2;
  OK;
}
CUresult cuModuleEnumerateFunctions(CUfunction *fs, unsigned n, CUmodule m) {
  (void)m;
  for (unsigned i = 0; i < n && i < 2; i++)
    fs[i] = (CUfunction)(uintptr_t)(i ? 3 : 2);
  OK;
}
CUresult cuFuncGetName(const char **name, CUfunction f) {
  *name = (uintptr_t)f == 3 ? fake_template : (uintptr_t)f == 2 ? "argus_calibrate" : "kern";
  OK;
}
CUresult cuModuleGetGlobal(CUdeviceptr *d, size_t *bytes, CUmodule m, const char *name) {
  unsigned char *mb = (unsigned char *)m;
  if (mb[100] && (!strcmp(name, "__argus_map") || !strcmp(name, "__argus_map_slots"))) {
    int desc = !strcmp(name, "__argus_map");
    *d = (CUdeviceptr)(uintptr_t)(mb + (desc ? 64 : 96));
    *bytes = desc ? 16 : 4;
    if (desc)
      fake_map = mb + 64;
    OK;
  }
  if (strcmp(name, "__argus_trace"))
    return CUDA_ERROR_NOT_FOUND;
  *d = (CUdeviceptr)(uintptr_t)m;
  *bytes = 32;
  fake_desc = (unsigned char *)m;
  OK;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)f, (void)a, (void)v;
  OK;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned smem, CUstream s, void **args,
                        void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s, (void)extra;
  /* a profiler injected into the process (ncu's kernel replay) runs the
   * kernel inside this call: behind a closed gate that waits forever */
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (inj && *inj && gate_addr && *gate_addr < gate_expect)
    return CUDA_ERROR_LAUNCH_TIMEOUT;
  if ((uintptr_t)f != 2 && fake_desc) { /* a traced kernel: what its probes would leave */
    uint64_t records, meta;
    uint32_t cap, enabled, launch;
    memcpy(&records, fake_desc, 8);
    memcpy(&meta, fake_desc + 8, 8);
    memcpy(&cap, fake_desc + 16, 4);
    memcpy(&enabled, fake_desc + 20, 4);
    memcpy(&launch, fake_desc + 24, 4);
    const char *c = getenv("ARGUS_COLLECT");
    if (c && !strcmp(c, "trace"))
      fake_log("launch %u enabled %u cap %u", launch, enabled, cap);
    const char *nr = getenv("FAKE_CUDA_RECORDS");
    uint32_t n = nr && *nr ? (uint32_t)atoi(nr) : 0;
    uint64_t warps = (uint64_t)gx * gy * gz * ((bx * by * bz + 31) / 32);
    for (uint64_t w = 0; enabled && n && w < warps; w++) {
      uint32_t *mw = (uint32_t *)(uintptr_t)(meta + w * 64);
      mw[9] = n;      /* count */
      mw[10] = 1;     /* flags: exited */
      mw[11] = launch;
      mw[12] = n;     /* max_count */
    }
    (void)records;
  }
  if ((uintptr_t)f != 2 && fake_map) {
    uint64_t slots;
    uint32_t cap, enabled, need;
    memcpy(&slots, fake_map, 8);
    memcpy(&cap, fake_map + 8, 4);
    memcpy(&enabled, fake_map + 12, 4);
    memcpy(&need, fake_map + 32, 4);
    for (uint32_t i = 1; enabled && i < need; i++)
      ((uint64_t *)(uintptr_t)slots)[cap >= need ? i : 0] += i;
  }
  if ((uintptr_t)f == 2) { /* calibration: 10 ms at 1.98 GHz */
    uint64_t *out = (uint64_t *)(uintptr_t)(*(CUdeviceptr *)args[0]);
    out[0] = 1000;
    out[1] = 5000;
    out[2] = 1000 + 10000000;
    out[3] = 5000 + 19800000;
  }
  return poisoned ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  *p = (CUdeviceptr)(uintptr_t)m;
  return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  OK;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  (void)s;
  memset((void *)(uintptr_t)p, v, n);
  OK;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  (void)s;
  memcpy((void *)(uintptr_t)d, h, n);
  OK;
}
CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) {
  memcpy(h, (const void *)(uintptr_t)d, n);
  OK;
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) {
  (void)f;
  *p = calloc(1, n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) {
  if ((void *)gate_addr == p) /* the gate goes with its memory */
    gate_addr = NULL;
  free(p);
  OK;
}
CUresult cuMemGetInfo(size_t *fr, size_t *total) {
  *fr = 64u << 20;
  *total = 80u << 20;
  OK;
}
CUresult cuStreamSynchronize(CUstream s) { (void)s; OK; }
CUresult cuStreamCreate(CUstream *s, unsigned f) {
  (void)f;
  *s = (CUstream)calloc(1, 8);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamDestroy(CUstream s) {
  free(s);
  OK;
}
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { (void)s, (void)e, (void)f; OK; }
CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_FAKE";
  OK;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered" : "fake";
  OK;
}

/* what a harness calls beside the host runtime (examples/tma_probe) */
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) {
  memcpy((void *)(uintptr_t)d, h, n);
  OK;
}
CUresult cuMemsetD32(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t i = 0; i < n; i++)
    ((unsigned *)(uintptr_t)d)[i] = v;
  OK;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank,
                                void *base, const cuuint64_t *dims, const cuuint64_t *strides,
                                const cuuint32_t *box, const cuuint32_t *estr,
                                CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  (void)t, (void)rank, (void)base, (void)dims, (void)strides, (void)box, (void)estr, (void)il,
      (void)sw, (void)l2, (void)oob;
  memset(m, 0, sizeof *m);
  OK;
}
CUresult cuEventCreate(CUevent *e, unsigned f) {
  (void)f;
  *e = (CUevent)calloc(1, 8);
  OK;
}
CUresult cuEventDestroy(CUevent e) {
  free(e);
  OK;
}
/* an event remembers that it was recorded: the elapsed time of one that was
 * not is an error, as the driver's (CUDA_ERROR_INVALID_HANDLE) */
CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)s;
  *(unsigned char *)e = 1;
  OK;
}
CUresult cuEventSynchronize(CUevent e) { (void)e; OK; }
/* Kernel times and occupancy for CPU tests of the perturbation report: from
 * FAKE_CUDA_<WHAT>_<COLLECT> (COLLECT: TIME or TRACE, from the run's
 * ARGUS_COLLECT), else the default. */
static double fake_num(const char *what, double dflt) {
  const char *c = getenv("ARGUS_COLLECT");
  char k[64];
  snprintf(k, sizeof k, "FAKE_CUDA_%s_%s", what, c && !strcmp(c, "time") ? "TIME" : "TRACE");
  const char *v = getenv(k);
  return v && *v ? atof(v) : dflt;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  if (!*(unsigned char *)a || !*(unsigned char *)b)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)(fake_num("NS", 10000.0) / 1e6);
  OK;
}
CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned f) {
  (void)f;
  *d = (CUdeviceptr)(uintptr_t)p;
  OK;
}
/* the gate: a real driver waits; the fake checks the host released the last
 * one before this one is queued (never waits: the harness is single-threaded) */
CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned f) {
  (void)s, (void)f;
  gate_addr = (volatile uint32_t *)(uintptr_t)a;
  gate_expect = v;
  OK;
}

/* a template kernel of 168 registers and 1,072 bytes of static shared memory
 * (the figures); the driver's occupancy by the same rules, so the
 * report's computed and driver figures can be compared. FAKE_CUDA_REGS_<RUN>
 * and FAKE_CUDA_CTAS_<RUN> (RUN: TIME or TRACE, the collection mode) set
 * other figures per run. */
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  (void)f;
  *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS              ? (int)fake_num("REGS", 168)
       : a == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES ? 1072
                                                  : 0;
  OK;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads,
                                                     size_t smem) {
  (void)f;
  /* 168 regs: 5376 per warp, 3 warps per sub-partition: 12 warps */
  int warps = (threads + 31) / 32;
  int by_regs = warps ? 12 / warps : 0;
  int by_smem = (int)(233472 / (((size_t)1072 + smem + 1024 + 127) / 128 * 128));
  *n = (int)fake_num("CTAS", by_regs < by_smem ? by_regs : by_smem);
  OK;
}
