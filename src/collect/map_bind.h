/*
 * map_bind.h — the in-harness half of the mapping run (not part of the
 * public interface): binds the counter slots of a mapping variant
 * (src/ptx/xform_map.c) and writes what they counted. libc alone, like the
 * rest of libargus_host; the driver calls come in a table, so the host
 * runtime passes its own (host.c's dlopen'ed driver) and the CPU tests a
 * fake one.
 *
 * Protocol (docs/attribution.md, "The mapping run"):
 *   after loading a module: ag__map_bind — when the module has the
 *     descriptor __argus_map {u64 slots, u32 capacity, u32 enabled} and
 *     __argus_map_slots (the slots its layout needs), allocates and zeroes
 *     the slots and writes the descriptor; a module without them is no
 *     mapping variant (bound = 0, not an error);
 *   every launch: nothing (the counts add up over the run's launches);
 *   at finish, after the device is idle: ag__map_write, the counts as
 *     "argus-map-counts" JSON (ag_attr_counts_from_json reads it), then
 *     ag__map_unbind.
 */
#ifndef ARGUS_MAP_BIND_H
#define ARGUS_MAP_BIND_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define AG_MAP_DESC_SYMBOL "__argus_map"
#define AG_MAP_SLOTS_SYMBOL "__argus_map_slots"
#define AG_MAP_DESC_BYTES 16
#define AG_MAP_COUNTS_FILE "map_counts.json"
/* the most slots a mapping run binds (2 GiB of counters) */
#define AG_MAP_MAX_SLOTS (1u << 28)

typedef struct ag__map_cu {
  CUresult (*get_global)(CUdeviceptr *dptr, size_t *bytes, CUmodule mod, const char *name);
  CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t bytes);
  CUresult (*mem_free)(CUdeviceptr dptr);
  CUresult (*memset_d8)(CUdeviceptr dptr, unsigned char v, size_t n, CUstream s);
  CUresult (*htod)(CUdeviceptr dst, const void *src, size_t n, CUstream s);
  CUresult (*dtoh)(void *dst, CUdeviceptr src, size_t n);
} ag__map_cu;

typedef struct ag__map_binding {
  int bound;        /* the module is a mapping variant and its slots are bound */
  CUdeviceptr slots;
  uint32_t nslots;  /* bound: the descriptor's capacity */
  uint32_t need;    /* the slots the variant asks for (__argus_map_slots) */
  uint8_t desc[AG_MAP_DESC_BYTES]; /* what the descriptor holds */
} ag__map_binding;

/* Binds the slots of a mapping module (see above): as many as it needs, or
 * max_slots when that is smaller (0: no limit; ARGUS_MAP_SLOTS) — the
 * descriptor's capacity is then below the need and the variant counts every
 * execution in slot 0, the dropped ones (b->need keeps the need). 0: bound,
 * or not a mapping module (b->bound = 0). On failure a negative AG_HOST_E*
 * code and the reason in why: AG_HOST_EINVAL for a descriptor of the wrong
 * size or a slot count of 0 or above AG_MAP_MAX_SLOTS, AG_HOST_ECUDA for a
 * failed driver call (named). */
int ag__map_bind(const ag__map_cu *cu, CUmodule mod, CUstream s, uint32_t max_slots,
                 ag__map_binding *b, char *why, size_t whylen);
/* Copies the slots out and writes <dir>/map_counts.json: {"format":
 * "argus-map-counts", "version": 1, "slots": N (bound), "needed": the
 * variant's need, "dropped": slot 0, "counts": [N counts]}. The device must
 * be idle. */
int ag__map_write(const ag__map_cu *cu, const ag__map_binding *b, const char *dir, char *why,
                  size_t whylen);
/* Frees the slots; the descriptor keeps pointing at them, so unbind only
 * after the module's last launch. */
void ag__map_unbind(const ag__map_cu *cu, ag__map_binding *b);

#endif
