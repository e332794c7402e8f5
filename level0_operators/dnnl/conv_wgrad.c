/* The weight and bias gradients of a 2-d Conv with few input channels, unit
 * strides and dilations, and one group, in plain C: the first layer of an
 * image network (LeNet's 1 -> 6 channels, 5x5, on 28x28 images).
 *
 * oneDNN 2.6's backward-weights kernels block channels by eight: with one
 * input channel they reorder X into blocks that are seven-eighths zeros and
 * reach a few percent of the machine's peak (1.0 ms for LeNet's first layer at
 * batch 64 on a 2-core AVX2 machine, reorders excluded). Here each weight is a
 * dot product of a gradient plane with a shifted window of the zero-padded
 * input plane, eight output columns at a time:
 *
 *   dW[m][c][kh][kw] = sum over n, oh, ow of dY[n][m][oh][ow] * Xpad[n][c][oh + kh][ow + kw]
 *   dB[m]            = sum over n, oh, ow of dY[n][m][oh][ow]
 *
 * The rows of dY are copied into a buffer padded to a multiple of eight
 * columns with zeros, so that the inner loop has no remainder; X is copied
 * into a buffer holding the convolution's zero padding. */
#include "conv_wgrad.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define LANES 8

#if defined(__GNUC__)
typedef float v8 __attribute__((vector_size(LANES * sizeof(float))));

/* Loads eight floats from any address. */
#define LOAD(p) (memcpy(&t, (p), sizeof t), t)

/* Two taps side by side: s[0] over x, s[1] over x + 1, sharing the loads of d.
 * Eight accumulators keep the additions of consecutive rows independent. */
#define KERNEL_BODY                                                                                \
    {                                                                                              \
        v8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0}, u, t;   \
        for (int64_t r = 0; r < rows; r++, d += dstride, x += xstride) {                           \
            int64_t j = 0;                                                                         \
            for (; j + 4 * LANES <= width; j += 4 * LANES) {                                       \
                u = LOAD(d + j);                                                                   \
                a0 += u * LOAD(x + j);                                                             \
                b0 += u * LOAD(x + j + 1);                                                         \
                u = LOAD(d + j + LANES);                                                           \
                a1 += u * LOAD(x + j + LANES);                                                     \
                b1 += u * LOAD(x + j + LANES + 1);                                                 \
                u = LOAD(d + j + 2 * LANES);                                                       \
                a2 += u * LOAD(x + j + 2 * LANES);                                                 \
                b2 += u * LOAD(x + j + 2 * LANES + 1);                                             \
                u = LOAD(d + j + 3 * LANES);                                                       \
                a3 += u * LOAD(x + j + 3 * LANES);                                                 \
                b3 += u * LOAD(x + j + 3 * LANES + 1);                                             \
            }                                                                                      \
            for (; j < width; j += LANES) {                                                        \
                u = LOAD(d + j);                                                                   \
                a0 += u * LOAD(x + j);                                                             \
                b0 += u * LOAD(x + j + 1);                                                         \
            }                                                                                      \
        }                                                                                          \
        v8 a = (a0 + a1) + (a2 + a3), b = (b0 + b1) + (b2 + b3);                                   \
        float sa = 0, sb = 0;                                                                      \
        for (int l = 0; l < LANES; l++) {                                                          \
            sa += a[l];                                                                            \
            sb += b[l];                                                                            \
        }                                                                                          \
        s[0] = sa;                                                                                 \
        s[1] = sb;                                                                                 \
    }

/* s[k] = sum over `rows` rows of d[0..width) * x[k..k + width) for k = 0, 1;
 * width is a multiple of LANES and x has one readable column past it. */
static void dot2_rows_generic(const float *d, const float *x, int64_t rows, int64_t width,
                              int64_t dstride, int64_t xstride, float *s) KERNEL_BODY

#if defined(__x86_64__)
    /* The same loop compiled for AVX2, chosen at run time where the CPU has it. */
    __attribute__((target("avx2"))) static void dot2_rows_avx2(const float *d, const float *x,
                                                               int64_t rows, int64_t width,
                                                               int64_t dstride, int64_t xstride,
                                                               float *s) KERNEL_BODY
#endif

#else /* a compiler without vector extensions */
static void dot2_rows_generic(const float *d, const float *x, int64_t rows, int64_t width,
                              int64_t dstride, int64_t xstride, float *s)
{
    s[0] = s[1] = 0;
    for (int64_t r = 0; r < rows; r++, d += dstride, x += xstride)
        for (int64_t j = 0; j < width; j++) {
            s[0] += d[j] * x[j];
            s[1] += d[j] * x[j + 1];
        }
}
#endif

    typedef void (*dot2_rows_fn)(const float *, const float *, int64_t, int64_t, int64_t, int64_t,
                                 float *);

static dot2_rows_fn pick_dot2_rows(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) return dot2_rows_avx2;
#endif
    return dot2_rows_generic;
}

int d5__conv_wgrad_fits(const d5_conv_geometry *g)
{
    if (g->transposed || g->n != 2 || g->group != 1 || g->in_channels > D5_CONV_WGRAD_MAX_CHANNELS)
        return 0;
    for (int32_t i = 0; i < 2; i++)
        if (g->strides[i] != 1 || g->dilations[i] != 1) return 0;
    return 1;
}

static int64_t round_up(int64_t v, int64_t m)
{
    return (v + m - 1) / m * m;
}

d5_status d5__conv_wgrad_init(d5_conv_wgrad *w, const d5_conv_geometry *g)
{
    memset(w, 0, sizeof *w);
    w->g = g;
    w->dy_cols = round_up(g->out[1], LANES);
    w->x_cols = w->dy_cols + g->kernel[1]; /* one column for the second tap of a pair */
    w->x_rows = g->out[0] + g->kernel[0] - 1;
    w->ones = d5_alloc((size_t)(w->dy_cols + 1) * sizeof(float), "Conv weight gradient");
    if (!w->ones) return D5_ERR_NOMEM;
    for (int64_t i = 0; i <= w->dy_cols; i++) w->ones[i] = 1.0f;
    return D5_OK;
}

void d5__conv_wgrad_free(d5_conv_wgrad *w)
{
    d5_free(w->ones);
    w->ones = NULL;
}

/* Copies input plane `src` (H x W) into the padded buffer `xp`: row r,
 * column q hold X[r - pad_top][q - pad_left], zero outside X. */
static void fill_x(const d5_conv_wgrad *w, const float *src, float *xp)
{
    const d5_conv_geometry *g = w->g;
    const int64_t h = g->in[0], wd = g->in[1], pt = g->pads_begin[0], pl = g->pads_begin[1];
    for (int64_t r = 0; r < w->x_rows; r++) {
        float *row = xp + r * w->x_cols;
        int64_t ir = r - pt;
        if (ir < 0 || ir >= h) {
            memset(row, 0, (size_t)w->x_cols * sizeof *row);
            continue;
        }
        /* x_cols >= W + pad_left + pad_right: the row fits. */
        memset(row, 0, (size_t)pl * sizeof *row);
        memcpy(row + pl, src + ir * wd, (size_t)wd * sizeof *row);
        memset(row + pl + wd, 0, (size_t)(w->x_cols - pl - wd) * sizeof *row);
    }
}

/* Output channel oc over the whole batch, with the thread's buffers. */
static void one_channel(const d5_conv_wgrad *w, dot2_rows_fn dot2, int64_t oc, const float *x,
                        const float *dy, float *dw, float *db, float *dyp, float *xp)
{
    const d5_conv_geometry *g = w->g;
    const int64_t oh = g->out[0], ow = g->out[1], kh = g->kernel[0], kw = g->kernel[1];
    const int64_t cin = g->in_channels, m = g->out_channels, taps = kh * kw;
    float pair[2], *out = dw ? dw + oc * cin * taps : NULL;
    for (int64_t n = 0; n < g->batch; n++) {
        const float *src = dy + (n * m + oc) * g->out_size;
        for (int64_t r = 0; r < oh; r++)
            memcpy(dyp + r * w->dy_cols, src + r * ow, (size_t)ow * sizeof(float));
        if (db) { /* the plane against a row of ones */
            dot2(dyp, w->ones, oh, w->dy_cols, w->dy_cols, 0, pair);
            db[oc] += pair[0];
        }
        for (int64_t c = 0; out && c < cin; c++) {
            fill_x(w, x + (n * cin + c) * g->in_size, xp);
            float *o = out + c * taps;
            for (int64_t i = 0; i < kh; i++)
                for (int64_t j = 0; j < kw; j += 2) {
                    dot2(dyp, xp + i * w->x_cols + j, oh, w->dy_cols, w->dy_cols, w->x_cols, pair);
                    o[i * kw + j] += pair[0];
                    if (j + 1 < kw) o[i * kw + j + 1] += pair[1];
                }
        }
    }
}

d5_status d5__conv_wgrad_run(const d5_conv_wgrad *w, const float *x, const float *dy, float *dw,
                             float *db)
{
    const d5_conv_geometry *g = w->g;
    const int64_t m = g->out_channels, taps = g->kernel[0] * g->kernel[1];
    const int64_t per_thread = g->out[0] * w->dy_cols + w->x_rows * w->x_cols;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
    if (threads > m) threads = (int)m;
#endif
    /* The buffers of every thread, allocated here so that a failure is
     * reported on the caller's thread; their padding columns stay zero. */
    float *scratch = d5_calloc((size_t)threads * (size_t)per_thread, sizeof(float),
                               "Conv weight gradient buffers");
    if (!scratch) return D5_ERR_NOMEM;
    dot2_rows_fn dot2 = pick_dot2_rows();
    if (dw) memset(dw, 0, (size_t)(m * g->in_channels * taps) * sizeof *dw);
    if (db) memset(db, 0, (size_t)m * sizeof *db);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (int64_t oc = 0; oc < m; oc++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        float *dyp = scratch + (size_t)t * (size_t)per_thread;
        one_channel(w, dot2, oc, x, dy, dw, db, dyp, dyp + g->out[0] * w->dy_cols);
    }
    d5_free(scratch);
    return D5_OK;
}
