/* The weight and bias gradients of a 2-d Conv with few input channels, unit
 * strides and dilations, and one group, in plain C: the first layer of an
 * image network (LeNet's 1 -> 6 channels, 5x5, on 28x28 images).
 *
 * oneDNN 2.6's backward-weights kernels block channels by eight or sixteen:
 * with one input channel they reorder X into blocks that are mostly zeros and
 * reach a few percent of the machine's peak (1.0 ms for LeNet's first layer at
 * batch 64 on a 2-core AVX2 machine, reorders excluded). Here each weight is a
 * dot product of a gradient plane with a shifted window of the zero-padded
 * input plane:
 *
 *   dW[m][c][kh][kw] = sum over n, oh, ow of dY[n][m][oh][ow] * Xpad[n][c][oh + kh][ow + kw]
 *   dB[m]            = sum over n, oh, ow of dY[n][m][oh][ow]
 *
 * One pass over the rows of dY computes all the taps of a kernel row (up to
 * eight): each vector of dY, read from NCHW with its row's tail masked, feeds
 * one multiply-add per tap, and each vector of X one per output channel of a
 * block of up to four. Work is split by (image, block of output channels); an
 * image's input planes are padded once per thread that needs them. Each
 * thread keeps per-lane partial sums of every weight, added at the end in a
 * fixed order (conv_first_kernels.inc holds the vector code). */
#include "conv_wgrad.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int d5__conv_wgrad_fits(const d5_conv_geometry *g)
{
    if (g->transposed || g->n != 2 || g->group != 1 || g->in_channels > D5_CONV_WGRAD_MAX_CHANNELS)
        return 0;
    for (int32_t i = 0; i < 2; i++)
        if (g->strides[i] != 1 || g->dilations[i] != 1) return 0;
    return 1;
}

d5_status d5__conv_wgrad_init(d5_conv_wgrad *w, const d5_conv_geometry *g, const d5_conv_kernels *k)
{
    memset(w, 0, sizeof *w);
    w->g = g;
    w->k = k ? k : d5__conv_kernels_pick();
    w->x_cols = d5__conv_padded_cols(g, w->k);
    w->x_plane = (g->in[0] + g->pads_begin[0] + g->pads_end[0]) * w->x_cols;
    /* Passes of at most eight taps, then as many channels as the sums allow. */
    const int64_t kw = g->kernel[1] > 0 ? g->kernel[1] : 1;
    w->passes = (kw + 7) / 8;
    int64_t taps = (kw + w->passes - 1) / w->passes, mb = w->k->acc_max / taps;
    if (mb > w->k->wmb_max) mb = w->k->wmb_max;
    if (mb < 1) mb = 1;
    w->blocks = (g->out_channels + mb - 1) / mb;
    return D5_OK;
}

void d5__conv_wgrad_free(d5_conv_wgrad *w)
{
    memset(w, 0, sizeof *w);
}

/* What every thread of one call reads. */
typedef struct job {
    const d5_conv_wgrad *w;
    const float *x, *dy;
    int want_w, want_b;
    int64_t per_thread; /* floats: the padded planes, then the partial sums */
} job;

/* Items [lo, hi) of the (image, block of output channels) pairs into the
 * thread's buffer `buf`: padded planes, then lanes-wide partial sums of every
 * weight (M, C, kh, kw) and every bias (M). */
static void run_items(const job *jb, int64_t lo, int64_t hi, float *buf)
{
    const d5_conv_wgrad *w = jb->w;
    const d5_conv_geometry *g = w->g;
    const d5_conv_kernels *k = w->k;
    const int64_t cin = g->in_channels, m = g->out_channels, kh = g->kernel[0], kw = g->kernel[1];
    const int64_t lanes = k->lanes, pstride = cin * kh * kw * lanes;
    float *xp = buf, *pw = buf + cin * w->x_plane, *pb = pw + m * pstride;
    int64_t padded = -1;
    for (int64_t it = lo; it < hi; it++) {
        int64_t n = it / w->blocks, m0, mb;
        d5__conv_split(m, w->blocks, it % w->blocks, &m0, &mb);
        const float *dy = jb->dy + (n * m + m0) * g->out_size;
        for (int64_t j = 0; jb->want_b && j < mb; j++)
            k->sum(dy + j * g->out_size, g->out_size, pb + (m0 + j) * lanes);
        if (!jb->want_w) continue;
        if (padded != n) {
            for (int64_t c = 0; c < cin; c++)
                d5__conv_pad_plane(g, jb->x + (n * cin + c) * g->in_size, w->x_cols,
                                   xp + c * w->x_plane);
            padded = n;
        }
        for (int64_t c = 0; c < cin; c++)
            for (int64_t i = 0; i < kh; i++)
                for (int64_t p = 0; p < w->passes; p++) {
                    int64_t k0, kb;
                    d5__conv_split(kw, w->passes, p, &k0, &kb);
                    k->wgrad_taps(dy, g->out_size, xp + c * w->x_plane + i * w->x_cols + k0,
                                  g->out[0], g->out[1], w->x_cols,
                                  pw + m0 * pstride + ((c * kh + i) * kw + k0) * lanes, pstride,
                                  (int)mb, (int)kb);
                }
    }
}

/* out[i] = the sum over threads t, then lanes l, of part_t[i * lanes + l]. */
static void reduce(const float *buf, int64_t per_thread, int threads, int64_t offset, int64_t count,
                   int64_t lanes, float *out)
{
    for (int64_t i = 0; i < count; i++) {
        float s = 0;
        for (int t = 0; t < threads; t++) {
            const float *p = buf + t * per_thread + offset + i * lanes;
            for (int64_t l = 0; l < lanes; l++) s += p[l];
        }
        out[i] = s;
    }
}

d5_status d5__conv_wgrad_run(const d5_conv_wgrad *w, const float *x, const float *dy, float *dw,
                             float *db)
{
    const d5_conv_geometry *g = w->g;
    const int64_t m = g->out_channels, weights = m * g->in_channels * g->kernel[0] * g->kernel[1];
    const int64_t lanes = w->k->lanes, planes = g->in_channels * w->x_plane;
    const int64_t items = g->batch * w->blocks;
    job jb = {w, x, dy, dw != NULL, db != NULL, planes + (weights + m) * lanes};
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
    if (threads > items) threads = items > 0 ? (int)items : 1;
#endif
    /* The buffers of every thread, allocated here so that a failure is
     * reported on the caller's thread; the partial sums start at zero. */
    float *buf = d5_calloc((size_t)threads * (size_t)jb.per_thread, sizeof(float),
                           "Conv weight gradient buffers");
    if (!buf) return D5_ERR_NOMEM;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    {
        /* The team may be smaller than asked for: split among those that
         * came (the unused buffers add zeros). */
        int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        run_items(&jb, items * t / nt, items * (t + 1) / nt, buf + t * jb.per_thread);
    }
#else
    run_items(&jb, 0, items, buf);
#endif
    if (dw) reduce(buf, jb.per_thread, threads, planes, weights, lanes, dw);
    if (db) reduce(buf, jb.per_thread, threads, planes + weights * lanes, m, lanes, db);
    d5_free(buf);
    return D5_OK;
}
