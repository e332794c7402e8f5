/* The shape of one recurrent-operator reference case of rnn_reference.h,
 * which make_rnn_reference.py writes. */
#ifndef D5_TEST_RNN_CASE_H
#define D5_TEST_RNN_CASE_H

#include <stddef.h>
#include <stdint.h>

/* One case: the operator's attributes and sizes, its inputs (NULL: omitted),
 * its outputs, the output gradients of the loss and the input gradients, in
 * the case's layout. */
typedef struct rnn_ref_case {
    const char *name, *op, *direction;
    int64_t layout, T, N, I, H;
    const char *activations; /* NULL: the defaults */
    const double *alpha;
    int64_t nalpha;
    const double *beta;
    int64_t nbeta;
    double clip; /* 0: none */
    int64_t lbr, input_forget;
    const int32_t *lens;
    const double *X, *W, *R, *B, *h0, *c0, *P;
    const double *Y, *Yh, *Yc;
    const double *wY, *wYh, *wYc;
    const double *dX, *dW, *dR, *dB, *dh0, *dc0, *dP;
} rnn_ref_case;

#endif
