/*
 * argus/region.cuh — region markers for CUDA C kernels.
 *
 *   ARGUS_BEGIN(name)        a region starts here
 *   ARGUS_END(name)          ... and ends here
 *   ARGUS_BEGIN_AT(name, i)  a region start that also records which register
 *                            holds the occurrence's iteration index i
 *   ARGUS_ROLE(name)         the executing warp's role (producer, consumer, ...)
 *
 * `name` is a C identifier, written without quotes. Each marker is an
 * inline-asm PTX comment (see docs/markers.md for the grammar):
 *
 *   // @argus begin <hash> <name> [<iteration operand>]
 *   // @argus end <hash> <name>
 *   // @argus role <hash> <name>
 *
 * where <hash> is the 64-bit FNV-1a hash of <name>, computed at compile time
 * (argus_detail::fnv1a, identical to ag_ptx_fnv1a in the Argus library). The
 * region's stable ID is the FNV-1a hash of its qualified name
 * (kernel/outer/inner), which Argus computes from the nesting it discovers.
 *
 * Markers are active only when ARGUS_MARKERS is defined: Argus defines it
 * when it compiles a program spec's CUDA source (and so should any build
 * that makes PTX for Argus). Without it — a production build, a kernel
 * compiled outside Argus — the macros expand to nothing and the machine code
 * is byte-identical to the same source without markers
 * (tests/ptx/test_markers_sass checks the cubins). With it, a marker is an
 * `asm volatile` comment: no instruction, but the compiler may not move code
 * across it (docs/markers.md has the measured effect).
 */
#ifndef ARGUS_REGION_CUH
#define ARGUS_REGION_CUH

namespace argus_detail {
/* FNV-1a, 64-bit, over the bytes of a NUL-terminated string. */
__host__ __device__ constexpr unsigned long long
fnv1a(const char *s, unsigned long long h = 0xcbf29ce484222325ull) {
  return *s ? fnv1a(s + 1, (h ^ (unsigned long long)(unsigned char)*s) * 0x100000001b3ull)
            : h;
}
} // namespace argus_detail

#if !defined(ARGUS_MARKERS) || !defined(__CUDA_ARCH__)
#define ARGUS_BEGIN(name) ((void)0)
#define ARGUS_END(name) ((void)0)
#define ARGUS_BEGIN_AT(name, i) ((void)(i))
#define ARGUS_ROLE(name) ((void)0)
#else
#define ARGUS__MARK(kind, name)                                                \
  asm volatile("// @argus " kind " %0 " #name ::"n"(::argus_detail::fnv1a(#name)))
#define ARGUS_BEGIN(name) ARGUS__MARK("begin", name)
#define ARGUS_END(name) ARGUS__MARK("end", name)
#define ARGUS_ROLE(name) ARGUS__MARK("role", name)
#define ARGUS_BEGIN_AT(name, i)                                                \
  asm volatile("// @argus begin %0 " #name " %1" ::"n"(                        \
                   ::argus_detail::fnv1a(#name)),                              \
               "r"((unsigned)(i)))
#endif

#endif
