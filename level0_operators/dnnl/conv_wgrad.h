/* The weight and bias gradients of small-channel 2-d convolutions in plain C,
 * used by the dnnl backend's Conv where oneDNN's kernels are slow (see
 * conv_wgrad.c). */
#ifndef D5_DNNL_CONV_WGRAD_H
#define D5_DNNL_CONV_WGRAD_H

#include "conv_first.h"

/* Input channels up to which the C kernels (forward and weight gradient) are used. */
#define D5_CONV_WGRAD_MAX_CHANNELS 4

typedef struct d5_conv_wgrad {
    const d5_conv_geometry *g;
    const d5_conv_kernels *k; /* the instruction set's kernels */
    int64_t x_cols, x_plane;  /* the zero-padded input plane: columns, floats */
    int64_t passes, blocks;   /* a kernel row's taps and the output channels, split so
                                 that each kernel call keeps its sums in registers */
} d5_conv_wgrad;

/* 1 when the geometry is one the C kernels handle: 2-d Conv, one group, at
 * most D5_CONV_WGRAD_MAX_CHANNELS input channels, unit strides and
 * dilations; any kernel size and padding. */
int d5__conv_wgrad_fits(const d5_conv_geometry *g);
/* Prepares `w` for kernels `k` (NULL: this CPU's); `g` must outlive it. */
d5_status d5__conv_wgrad_init(d5_conv_wgrad *w, const d5_conv_geometry *g,
                              const d5_conv_kernels *k);
void d5__conv_wgrad_free(d5_conv_wgrad *w);
/* dW (M, C, kh, kw) and dB (M) of X (N, C, H, W) and dY (N, M, OH, OW), all
 * plain NCHW; dw or db may be NULL when not wanted. Both are overwritten.
 * (image, block of output channels) pairs are split across the OpenMP threads where d5
 * is built with OpenMP (the runtime oneDNN runs on); each thread sums into
 * its own buffer and the buffers are added in thread order, so that with a
 * given number of threads the results are the same bit for bit on every run.
 * D5_ERR_NOMEM when the buffers cannot be allocated; dW and dB are then
 * untouched. */
D5_NODISCARD d5_status d5__conv_wgrad_run(const d5_conv_wgrad *w, const float *x, const float *dy,
                                          float *dw, float *db);

#endif
