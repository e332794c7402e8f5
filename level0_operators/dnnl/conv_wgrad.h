/* The weight and bias gradients of small-channel 2-d convolutions in plain C,
 * used by the dnnl backend's Conv where oneDNN's kernels are slow (see
 * conv_wgrad.c). */
#ifndef D5_DNNL_CONV_WGRAD_H
#define D5_DNNL_CONV_WGRAD_H

#include "../ref/conv_shape.h"

/* Input channels up to which the C kernel is used. */
#define D5_CONV_WGRAD_MAX_CHANNELS 1

typedef struct d5_conv_wgrad {
    const d5_conv_geometry *g;
    int64_t dy_cols;        /* columns of a dY row, padded to the vector width */
    int64_t x_rows, x_cols; /* the zero-padded input plane */
    float *ones;            /* dy_cols + 1 ones: a plane's sum is its dot product with them */
} d5_conv_wgrad;

/* 1 when the geometry is one the C kernel handles: 2-d, one group, at most
 * D5_CONV_WGRAD_MAX_CHANNELS input channels, unit strides and dilations. */
int d5__conv_wgrad_fits(const d5_conv_geometry *g);
/* Prepares `w`; `g` must outlive it. */
d5_status d5__conv_wgrad_init(d5_conv_wgrad *w, const d5_conv_geometry *g);
void d5__conv_wgrad_free(d5_conv_wgrad *w);
/* dW (M, C, kh, kw) and dB (M) of X (N, C, H, W) and dY (N, M, OH, OW), all
 * plain NCHW; dw or db may be NULL when not wanted. Both are overwritten.
 * Output channels are split across the OpenMP threads where d5 is built with
 * OpenMP (the runtime oneDNN runs on). */
D5_NODISCARD d5_status d5__conv_wgrad_run(const d5_conv_wgrad *w, const float *x, const float *dy,
                                          float *dw, float *db);

#endif
