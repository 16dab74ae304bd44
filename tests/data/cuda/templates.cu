// templates.cu — template kernels whose nvcc-mangled names test the
// demangler (tests/unit/test_demangle.c compares it with c++filt on them).
// Written for Argus; the bodies only keep the parameters alive.
#include <cstdint>
#include <cuda_fp16.h>

namespace gemm {
namespace detail {
template <int BM, int BN, typename T> struct Tile { T *p; };
}  // namespace detail

template <int BM, int BN, int BK, typename T>
__global__ void sgemm(T *c, const T *a, const T *__restrict__ b, int n) {
  if (c) c[0] = a[0] + b[0] + BM + BN + BK + n;
}
template __global__ void sgemm<128, 128, 8, float>(float *, const float *, const float *, int);
template __global__ void sgemm<64, 32, 16, double>(double *, const double *, const double *, int);

template <typename T, bool Tr>
__global__ void transpose(T *out, const T *in, unsigned m, long k) {
  if (Tr) out[0] = in[0] + m + k;
}
template __global__ void transpose<float, true>(float *, const float *, unsigned, long);
template __global__ void transpose<int8_t, false>(int8_t *, const int8_t *, unsigned, long);

template <int N, typename T>
__global__ void tiled(detail::Tile<N, N, T> t, const T *const *pp) { t.p[0] = **pp; }
template __global__ void tiled<256, float>(detail::Tile<256, 256, float>, const float *const *);
}  // namespace gemm

template <unsigned N, char C, typename T>
__global__ void weird(T x, T *y, unsigned short s, unsigned long long q) {
  y[0] = x + N + C + s + q;
}
template __global__ void weird<4294967295u, 'a', float>(float, float *, unsigned short,
                                                        unsigned long long);

template <int N> __global__ void neg(float *x) { x[0] = N; }
template __global__ void neg<-3>(float *);

__global__ void plain(float *x) { x[0] = 1; }
struct Params { int a; };
__global__ void withstruct(Params p, float *x) { x[0] = p.a; }

template <typename... Ts> __global__ void pack(int *x) { x[0] = sizeof...(Ts); }
template __global__ void pack<int, float, double>(int *);

template <typename T> struct Box { T v; };
template <typename T> __global__ void boxed(Box<Box<T>> b, volatile T *x) { x[0] = b.v.v; }
template __global__ void boxed<half>(Box<Box<half>>, volatile half *);

namespace {
template <long K> __global__ void anon(int64_t *x, uint64_t y) { x[0] = K + y; }
template __global__ void anon<7l>(int64_t *, uint64_t);
}  // namespace
