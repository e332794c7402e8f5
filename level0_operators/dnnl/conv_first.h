/* The forward of small-channel 2-d convolutions in plain C, and the vector
 * kernels it shares with the weight gradient (conv_wgrad.c): the first layer
 * of an image network, where oneDNN's kernels block channels by 16 and spend
 * more time padding and reordering than multiplying (see conv_first.c). */
#ifndef D5_DNNL_CONV_FIRST_H
#define D5_DNNL_CONV_FIRST_H

#include "../ref/conv_shape.h"

/* One instruction set's kernels, picked at run time (d5__conv_kernels_pick).
 * Vectors hold `lanes` floats; the forward computes up to `mb_max` output
 * channels by two vectors of an output row at a time, the weight gradient up
 * to `wmb_max` output channels by up to eight taps of a kernel row per pass
 * over dY, with at most `acc_max` (channels times taps) sums.
 *
 * Every kernel reads X from a zero-padded plane of `xc` columns per row,
 * xc >= round_up(OW, lanes) + KW - 1 (d5__conv_padded_cols), so that whole
 * vectors may be read past the last output column. */
typedef struct d5_conv_kernels {
    const char *isa; /* "avx512", "avx2" or "generic" */
    int32_t lanes, mb_max, wmb_max, acc_max;
    /* Output row chunk: y[m * ystride + j] for m < mb, j < cols (1 <= cols <=
     * 2 * lanes) is the sum over i < kh, k < kw, c < cin, in that order, of
     * w[((i * kw + k) * cin + c) * mb + m] * x[c * xplane + i * xc + j + k],
     * plus bias[m] (none when bias is NULL). */
    void (*fwd_row)(const float *x, int64_t xc, int64_t xplane, int64_t cin, int64_t kh, int64_t kw,
                    const float *w, const float *bias, float *y, int64_t ystride, int64_t cols,
                    int mb);
    /* Taps of a kernel row, for mb <= wmb_max channels and kb <= 8 taps,
     * mb * kb <= acc_max: part[m * pstride + k * lanes + l] gains lane l of
     * the sum over r < rows, j < ow of dy[m * dystride + r * ow + j] *
     * x[r * xc + j + k]; the lanes' sum is the tap's dot product. */
    void (*wgrad_taps)(const float *dy, int64_t dystride, const float *x, int64_t rows, int64_t ow,
                       int64_t xc, float *part, int64_t pstride, int mb, int kb);
    /* part[0 .. lanes) gains the sum of dy[0 .. n) spread over the lanes. */
    void (*sum)(const float *dy, int64_t n, float *part);
} d5_conv_kernels;

/* The kernels for this CPU: AVX-512, else AVX2 with FMA, else generic C. */
const d5_conv_kernels *d5__conv_kernels_pick(void);
/* The kernels of instruction set `isa` ("avx512", "avx2", "generic") where
 * this CPU runs them, else NULL: tests check each of them. */
const d5_conv_kernels *d5__conv_kernels_named(const char *isa);

/* Part i of `total` split into `parts` nearly equal ones (the first
 * total % parts one larger): its first index and its size. */
void d5__conv_split(int64_t total, int64_t parts, int64_t i, int64_t *first, int64_t *size);

/* Columns of the zero-padded input plane for geometry `g` with `k`'s vectors. */
int64_t d5__conv_padded_cols(const d5_conv_geometry *g, const d5_conv_kernels *k);

/* Copies input plane `src` (H x W) into `xp` (H + pad_top + pad_bottom rows
 * of `xc` columns): row r, column q hold X[r - pad_top][q - pad_left], zero
 * outside X. */
void d5__conv_pad_plane(const d5_conv_geometry *g, const float *src, int64_t xc, float *xp);

/* Y (N, M, OH, OW) of X (N, C, H, W), W (M, C, KH, KW) and the optional B
 * (M; NULL without a bias), all float32 in plain NCHW, followed by ReLU when
 * `relu` (as oneDNN's post-op computes it: y > 0 ? y : +0), for a geometry that
 * d5__conv_wgrad_fits (conv_wgrad.h), with kernels `k` (NULL: this CPU's). (image, block of output
 * channels) pairs are split across the OpenMP threads where d5 is built with OpenMP; each output
 * element is computed by one thread in a fixed order, so results do not depend on the thread count.
 * D5_ERR_NOMEM when the buffers cannot be allocated; Y is then untouched. */
D5_NODISCARD d5_status d5__conv_first_run(const d5_conv_kernels *k, const d5_conv_geometry *g,
                                          const float *x, const float *w, const float *b, int relu,
                                          float *y);

#endif
