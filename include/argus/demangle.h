/*
 * argus/demangle.h — Itanium C++ ABI names of CUDA kernels, demangled
 * (src/core/demangle.c). Template kernels have names like
 * _ZN4gemm5sgemmILi128ELi128ELi8EfEEvPT2_PKS1_S4_i; reports show
 * "gemm::sgemm<128, 128, 8, float>" and keep the mangled name in JSON.
 *
 * The subset is what CUDA kernels use: namespaces (and the anonymous one),
 * class and template names, template arguments that are types, integer or
 * bool literals, template parameters and argument packs, builtin types,
 * pointers, references, const/volatile/restrict, substitutions and
 * template-parameter references. Anything else (function and member
 * pointer types, expressions other than a parameter reference, lambdas,
 * special names) is refused: the caller shows the mangled name. The output
 * is spelled as binutils' c++filt spells it.
 *
 * No allocation and libc alone: libargus_host (linked into user harnesses)
 * compiles this file too. The codes are argus/core.h's (checked in
 * tests/unit/test_demangle.c).
 */
#ifndef ARGUS_DEMANGLE_H
#define ARGUS_DEMANGLE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  AG_DEMANGLE_EINVAL = -998, /* AG_EINVAL: not a mangled name, or outside the subset */
  AG_DEMANGLE_EFULL = -978,  /* AG_EFULL: the output (or a limit) is too small */
};

enum {
  AG_DEMANGLE_FULL = 0,  /* "void gemm::sgemm<128, 128, 8, float>(float*, ...)" */
  AG_DEMANGLE_SHORT = 1, /* "gemm::sgemm<128, 128, 8, float>": the qualified name and
                            its template arguments, no return type, no parameters */
};

/* Demangles `mangled` ("_Z...") into out (NUL-terminated, at most cap bytes).
 * Returns the length, or a negative code (out is then ""). */
int ag_demangle(const char *mangled, char *out, size_t cap, int form);

/* A region path ("<kernel>/mainloop/loads") for people: its kernel part in
 * the short form when it is a mangled name, the rest as is; the path
 * unchanged (truncated to cap) when it is not mangled or not demangled.
 * Returns the length written. */
size_t ag_demangle_path(const char *qname, char *out, size_t cap);

/* How many leading bytes of `query` name the kernel `mangled`: the mangled
 * name itself, its full or its short demangling, followed in query by '/'
 * (a region path) or its end. 0 when query does not start with that kernel. */
size_t ag_demangle_prefix(const char *mangled, const char *query);

/* A region path as the user wrote it ("gemm::sgemm<128, 128, 8, float>/loads",
 * or the full demangled signature) rewritten with the mangled kernel name
 * of kernels[0..n) whose spelling it starts with, into out. Returns 1 when
 * it rewrote, 0 when the query names no kernel by a demangled spelling (out
 * is then a copy of query; a mangled or plain name needs no rewriting), or
 * AG_DEMANGLE_EFULL when out is too small. */
int ag_demangle_resolve(const char *query, const char *const *kernels, int n, char *out,
                        size_t cap);

#ifdef __cplusplus
}
#endif
#endif
