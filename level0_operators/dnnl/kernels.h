/* The dnnl backend's own C kernels for the operators oneDNN has no primitive
 * for, or whose primitives cost more than the work (transformer networks:
 * Transpose, Softmax, LayerNormalization, Erf, Gelu, Where, Split, Concat,
 * Gather). They run on oneDNN's OpenMP threads (docs/threads.md) and are
 * written in C that GCC vectorises, each hot loop compiled three times
 * (AVX-512, AVX2 with FMA, the baseline) and chosen when the library loads
 * (D5_CLONES). Element-wise functions are the float32 polynomials below,
 * written so that the vectoriser takes them: no branches, no calls. */
#ifndef D5_DNNL_KERNELS_H
#define D5_DNNL_KERNELS_H

#include "d5/operator.h"

#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* One copy of a function per instruction set, picked at load time by the
 * CPU (GCC's function multiversioning; an ifunc on glibc). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define D5_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define D5_CLONES
#endif

/* A reduction loop the vectoriser may reorder (OpenMP's simd construct). */
#ifdef _OPENMP
#define D5__PRAGMA(x)  _Pragma(#x)
#define D5_SIMD_SUM(v) D5__PRAGMA(omp simd reduction(+ : v))
#define D5_SIMD_MAX(v) D5__PRAGMA(omp simd reduction(max : v))
#define D5_SIMD        _Pragma("omp simd")
#else
#define D5_SIMD_SUM(v)
#define D5_SIMD_MAX(v)
#define D5_SIMD
#endif

/* Splits the for loop that follows among the OpenMP threads in equal static
 * shares (nothing where d5 is built without OpenMP). */
#ifdef _OPENMP
#define D5_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define D5_PARALLEL_FOR
#endif

/* Work below this many bytes runs on the calling thread: a parallel region
 * costs a few microseconds. */
#define D5_PARALLEL_BYTES (64 * 1024)

/* Splits `items` work items among the threads of a parallel region (or runs
 * them all on the calling thread when `parallel` is 0): the body (the last
 * argument) sees the range
 * [lo, hi). */
#ifdef _OPENMP
#define D5_PARALLEL_RANGE(items, parallel, lo, hi, ...)                                            \
    {                                                                                              \
        int d5_par_ = (parallel);                                                                  \
        int64_t d5_items_ = (items);                                                               \
        _Pragma("omp parallel if (d5_par_)")                                                       \
        {                                                                                          \
            int64_t nt_ = omp_get_num_threads(), t_ = omp_get_thread_num();                        \
            int64_t lo = d5_items_ * t_ / nt_, hi = d5_items_ * (t_ + 1) / nt_;                    \
            __VA_ARGS__                                                                            \
        }                                                                                          \
    }
#else
#define D5_PARALLEL_RANGE(items, parallel, lo, hi, ...)                                            \
    {                                                                                              \
        (void)(parallel);                                                                          \
        int64_t lo = 0, hi = (items);                                                              \
        __VA_ARGS__                                                                                \
    }
#endif

/* exp(x) in float32, within a few units in the last place on [-87.3, 88.7] (Cephes'
 * expf polynomial after a Cody-Waite reduction); below -87.3 it gives 0, never
 * a denormal (whose arithmetic is some hundred times slower on Intel cores).
 * NaN gives NaN. */
static inline float d5__expf(float x0)
{
    /* NaN goes through as 0 (its integer conversion would be undefined) and
     * comes out as itself. */
    float x = x0 < -87.33654f ? -87.33654f : x0 == x0 ? x0 : 0.0f;
    x = x > 88.72283f ? 88.72283f : x;
    float t = x * 1.44269504088896341f;
    float k = (t + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    y = x0 < -87.33654f ? 0.0f : y * scale;
    return x0 == x0 ? y : x0;
}

/* erf(x) in float32, absolute error under 5e-7: a rational function of x^2
 * on [-4, 4] (the coefficients of Eigen's fast erf), +-1 outside. */
static inline float d5__erff(float x)
{
    x = x < -4.0f ? -4.0f : x;
    x = x > 4.0f ? 4.0f : x;
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 + -2.10102402082508e-06f;
    p = p * x2 + -5.69250639462346e-05f;
    p = p * x2 + -7.34990630326855e-04f;
    p = p * x2 + -2.95459980854025e-03f;
    p = p * x2 + -1.60960333262415e-02f;
    p = p * x;
    float q = -1.45660718464996e-05f;
    q = q * x2 + -2.13374055278905e-04f;
    q = q * x2 + -1.68282697438203e-03f;
    q = q * x2 + -7.37332916720468e-03f;
    q = q * x2 + -1.42647390514189e-02f;
    return p / q;
}

/* tanh(x) = 1 - 2 / (exp(2x) + 1), exact to float32 rounding where the
 * result matters; +-1 beyond |x| = 9. */
static inline float d5__tanhf(float x)
{
    x = x < -9.0f ? -9.0f : x;
    x = x > 9.0f ? 9.0f : x;
    return 1.0f - 2.0f / (d5__expf(2.0f * x) + 1.0f);
}

/* Runs the ref operator's create on the same inputs and attributes for its
 * checks and shape inference (so that both backends accept the same nodes
 * and give the same shapes and errors), then frees its state. */
d5_status d5__dnnl_ref_shapes(const d5_op_desc *ref, const d5_op_create_args *args);

/* D5_ERR_UNSUPPORTED unless input i is float32 ("Softmax (dnnl): input 0 is
 * float64; float32 only"). */
d5_status d5__dnnl_need_f32(const char *op, const d5_tensor *in, int32_t i);

/* The checks of a kernel with one float32 input: d5__dnnl_need_f32 on input
 * 0, then d5__dnnl_ref_shapes with the ref operator `ref`. */
d5_status d5__dnnl_f32_shapes(const d5_op_desc *ref, const char *op, const d5_op_create_args *args);

/* The start of the backward of a kernel whose only gradient is that of input
 * 0, with n elements: NULL when there is nothing left to do (that gradient is
 * not wanted, or no gradient flows in and it has been zeroed), else dX. */
float *d5__dnnl_grad_begin(const d5_op_call *call, int64_t n);

#endif
