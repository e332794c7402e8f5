/* The discrete Fourier transform shared by DFT and STFT (ref/dft.c). */
#ifndef D5_REF_SIGNAL_H
#define D5_REF_SIGNAL_H

#include "util.h"

/* X[m] = sum_k x[k] exp(-+2 pi i m k / n), for m in [0, nout), of the n
 * complex values x[k] (re[k * stride], im[k * stride]; im NULL for a real
 * signal), of which the first `given` are read and the rest are zero.
 * inverse: the + sign and a factor 1 / n. Writes out_re[m * out_stride] and
 * out_im[m * out_stride]. Naive: O(n * nout), with each angle reduced modulo
 * 2 pi exactly (m k mod n) so that long transforms stay accurate. */
void d5__dft(const double *re, const double *im, int64_t stride, int64_t given, int64_t n,
             int64_t nout, int inverse, double *out_re, double *out_im, int64_t out_stride);

#endif
