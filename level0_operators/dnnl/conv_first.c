/* The forward of a 2-d Conv with few input channels, unit strides and
 * dilations, and one group, in plain C: the first layer of an image network
 * (LeNet's 1 -> 6 channels, 5x5, pad 2, on 28x28 images).
 *
 * oneDNN 2.6 computes it into its blocked layout, six channels padded to
 * sixteen, and reorders the result to NCHW: for LeNet at batch 64 the reorder
 * costs more than half as much as the convolution. Here each output row is
 * computed in place, two vectors of columns by up to eight output channels at
 * a time, from the zero-padded input rows; every weight is broadcast once per
 * tap and feeds two multiply-adds per channel:
 *
 *   Y[n][m][oh][ow] = B[m] + sum over c, kh, kw of W[m][c][kh][kw] * Xpad[n][c][oh + kh][ow + kw]
 *
 * Each sum runs over kh, then kw, then c, with fused multiply-adds from zero,
 * and the bias comes last: the order of oneDNN 2.6's jit:avx512_core kernel,
 * whose results these equal bit for bit (those of jit:avx2 only without a
 * bias), so that a network computes the same values whether the executor
 * keeps this layer's output in oneDNN's blocked layout (oneDNN runs it) or in
 * ONNX's (this code runs it).
 *
 * The vector kernels (conv_first_kernels.inc) are compiled for AVX-512, for
 * AVX2 with FMA and for generic C, and chosen at run time; the weight
 * gradient (conv_wgrad.c) uses them too. */
#include "conv_first.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define K_ZERO()          0.0f
#define K_KEEP(v)         (void)(v)
#define K_SET1(x)         (x)
#define K_LOAD(p)         (*(p))
#define K_STORE(p, v)     (*(p) = (v))
#define K_ADD(a, b)       ((a) + (b))
#define K_FMA(a, b, c)    ((a) * (b) + (c))
#define K_MASK_T          int
#define K_MASK(n)         (n)
#define K_LOADM(p, m)     ((m) ? *(p) : 0.0f)
#define K_STOREM(p, m, v) ((m) ? (void)(*(p) = (v)) : (void)0)
#define K_NAME(f)         f##_generic
#define K_ISA             "generic"
#define K_TARGET
#define K_V     float
#define K_LANES 1
#define K_MB    4
#define K_WMB   2
#define K_ACC   8
#include "conv_first_kernels.inc"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* AVX2 with FMA: 16 registers hold 12 accumulators and the vectors they multiply. */
#define K_ZERO()       _mm256_setzero_ps()
#define K_KEEP(v)      __asm__("" : "+x"(v))
#define K_SET1(x)      _mm256_set1_ps(x)
#define K_LOAD(p)      _mm256_loadu_ps(p)
#define K_STORE(p, v)  _mm256_storeu_ps(p, v)
#define K_ADD(a, b)    _mm256_add_ps(a, b)
#define K_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define K_MASK_T       __m256i
#define K_MASK(n)                                                                                  \
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define K_LOADM(p, m)     _mm256_maskload_ps(p, m)
#define K_STOREM(p, m, v) _mm256_maskstore_ps(p, m, v)
#define K_NAME(f)         f##_avx2
#define K_ISA             "avx2"
#define K_TARGET          __attribute__((target("avx2,fma")))
#define K_V               __m256
#define K_LANES           8
#define K_MB              6
#define K_WMB             2
#define K_ACC             12
#include "conv_first_kernels.inc"

/* AVX-512: 32 registers hold 16 or 24 accumulators; tails are masked. */
#define K_ZERO()          _mm512_setzero_ps()
#define K_KEEP(v)         __asm__("" : "+v"(v))
#define K_SET1(x)         _mm512_set1_ps(x)
#define K_LOAD(p)         _mm512_loadu_ps(p)
#define K_STORE(p, v)     _mm512_storeu_ps(p, v)
#define K_ADD(a, b)       _mm512_add_ps(a, b)
#define K_FMA(a, b, c)    _mm512_fmadd_ps(a, b, c)
#define K_MASK_T          __mmask16
#define K_MASK(n)         ((__mmask16)((1u << (n)) - 1u))
#define K_LOADM(p, m)     _mm512_maskz_loadu_ps(m, p)
#define K_STOREM(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define K_NAME(f)         f##_avx512
#define K_ISA             "avx512"
#define K_TARGET          __attribute__((target("avx512f")))
#define K_V               __m512
#define K_LANES           16
#define K_MB              8
#define K_WMB             4
#define K_ACC             24
#include "conv_first_kernels.inc"
#endif

const d5_conv_kernels *d5__conv_kernels_pick(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) return &kernels_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &kernels_avx2;
#endif
    return &kernels_generic;
}

const d5_conv_kernels *d5__conv_kernels_named(const char *isa)
{
    const d5_conv_kernels *k = NULL;
    if (strcmp(isa, "generic") == 0) k = &kernels_generic;
#if defined(__GNUC__) && defined(__x86_64__)
    if (strcmp(isa, "avx2") == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        k = &kernels_avx2;
    if (strcmp(isa, "avx512") == 0 && __builtin_cpu_supports("avx512f")) k = &kernels_avx512;
#endif
    return k;
}

void d5__conv_split(int64_t total, int64_t parts, int64_t i, int64_t *first, int64_t *size)
{
    int64_t base = total / parts, extra = total % parts;
    *first = i * base + (i < extra ? i : extra);
    *size = base + (i < extra);
}

int64_t d5__conv_padded_cols(const d5_conv_geometry *g, const d5_conv_kernels *k)
{
    return (g->out[1] + k->lanes - 1) / k->lanes * k->lanes + g->kernel[1] - 1;
}

void d5__conv_pad_plane(const d5_conv_geometry *g, const float *src, int64_t xc, float *xp)
{
    const int64_t h = g->in[0], wd = g->in[1], pt = g->pads_begin[0], pl = g->pads_begin[1];
    const int64_t rows = h + pt + g->pads_end[0];
    for (int64_t r = 0; r < rows; r++, xp += xc) {
        int64_t ir = r - pt;
        if (ir < 0 || ir >= h) {
            memset(xp, 0, (size_t)xc * sizeof *xp);
            continue;
        }
        /* xc >= pad_left + W + pad_right: the row fits. */
        memset(xp, 0, (size_t)pl * sizeof *xp);
        memcpy(xp + pl, src + ir * wd, (size_t)wd * sizeof *xp);
        memset(xp + pl + wd, 0, (size_t)(xc - pl - wd) * sizeof *xp);
    }
}

/* What every thread of one forward call reads. */
typedef struct job {
    const d5_conv_geometry *g;
    const d5_conv_kernels *k;
    const float *x, *wp, *b;
    float *y;
    int64_t xc, xplane, blocks;
    int relu;
} job;

/* Items [lo, hi) of the (image, channel block) pairs, with the thread's padded
 * planes `xp`; consecutive items of one image pad it once. */
static void run_items(const job *jb, int64_t lo, int64_t hi, float *xp)
{
    const d5_conv_geometry *g = jb->g;
    const int64_t cin = g->in_channels, m = g->out_channels, kh = g->kernel[0], kw = g->kernel[1];
    const int64_t oh = g->out[0], ow = g->out[1], chunk = 2 * jb->k->lanes;
    int64_t padded = -1;
    for (int64_t it = lo; it < hi; it++) {
        int64_t n = it / jb->blocks, m0, mb;
        d5__conv_split(m, jb->blocks, it % jb->blocks, &m0, &mb);
        if (padded != n) {
            for (int64_t c = 0; c < cin; c++)
                d5__conv_pad_plane(g, jb->x + (n * cin + c) * g->in_size, jb->xc,
                                   xp + c * jb->xplane);
            padded = n;
        }
        const float *w = jb->wp + m0 * cin * kh * kw, *b = jb->b ? jb->b + m0 : NULL;
        float *y = jb->y + (n * m + m0) * g->out_size;
        for (int64_t r = 0; r < oh; r++)
            for (int64_t j = 0; j < ow; j += chunk)
                jb->k->fwd_row(xp + r * jb->xc + j, jb->xc, jb->xplane, cin, kh, kw, w, b,
                               y + r * ow + j, g->out_size, ow - j < chunk ? ow - j : chunk,
                               (int)mb);
        /* The block's planes, still in cache: +0 for a sum not above 0, as
         * oneDNN's ReLU post-op writes. */
        if (jb->relu)
            for (int64_t i = 0, e = mb * g->out_size; i < e; i++) y[i] = y[i] > 0 ? y[i] : 0.0f;
    }
}

d5_status d5__conv_first_run(const d5_conv_kernels *k, const d5_conv_geometry *g, const float *x,
                             const float *w, const float *b, int relu, float *y)
{
    if (!k) k = d5__conv_kernels_pick();
    const int64_t m = g->out_channels, cin = g->in_channels, kh = g->kernel[0], kw = g->kernel[1];
    const int64_t taps = cin * kh * kw;
    job jb = {g, k, x, NULL, b, y, d5__conv_padded_cols(g, k), 0, 0, relu};
    jb.xplane = (g->in[0] + g->pads_begin[0] + g->pads_end[0]) * jb.xc;
    jb.blocks = (m + k->mb_max - 1) / k->mb_max;
    const int64_t items = g->batch * jb.blocks, per_thread = g->in_channels * jb.xplane;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
    if (threads > items) threads = items > 0 ? (int)items : 1;
#endif
    /* The weights of each block tap by tap in the kernels' order (kernel row,
     * kernel column, input channel), its channels side by side; then the
     * padded planes of every thread. */
    float *buf =
        d5_alloc((size_t)(m * taps + threads * per_thread) * sizeof(float), "Conv forward buffers");
    if (!buf) return D5_ERR_NOMEM;
    for (int64_t blk = 0; blk < jb.blocks; blk++) {
        int64_t m0, mb;
        d5__conv_split(m, jb.blocks, blk, &m0, &mb);
        for (int64_t c = 0; c < cin; c++)
            for (int64_t r = 0; r < kh; r++)
                for (int64_t q = 0; q < kw; q++) {
                    float *to = buf + m0 * taps + ((r * kw + q) * cin + c) * mb;
                    const float *from = w + m0 * taps + (c * kh + r) * kw + q;
                    for (int64_t j = 0; j < mb; j++) to[j] = from[j * taps];
                }
    }
    jb.wp = buf;
    float *planes = buf + m * taps;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        /* The team may be smaller than asked for: split among those that came. */
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        run_items(&jb, items * t / nt, items * (t + 1) / nt, planes + t * per_thread);
    }
#else
    run_items(&jb, 0, items, planes);
#endif
    d5_free(buf);
    return D5_OK;
}
