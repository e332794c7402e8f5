/* RNN (ONNX opsets 7 to 22): a one-layer simple recurrent network,
 *   H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb),
 * f = Tanh by default, for each direction. Inputs X, W, R, optional B,
 * sequence_lens and initial_h; outputs Y and optional Y_h. The attributes,
 * directions, sequence lengths and layouts are in rnn_common.c.
 * https://onnx.ai/onnx/operators/onnx__RNN.html */
#include "rnn.h"

/* cache: the raw pre-activation a. */
static void rnn_step(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                     const double *c, double *hn, double *cn, double *cache)
{
    (void)c;
    (void)cn;
    double *a = cache;
    d5__rnn_input(r, w, 0, x, a);
    d5__rnn_recur(r, w, 0, h, a);
    for (int64_t j = 0; j < r->H; j++) hn[j] = d5__rnn_apply(r, w, 0, a[j]);
}

static void rnn_back(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                     const double *c, const double *cache, const double *dhn, const double *dcn,
                     double *dx, double *dh, double *dc, double *scratch)
{
    (void)c;
    (void)dcn;
    (void)dc;
    double *dA = scratch;
    for (int64_t j = 0; j < r->H; j++) dA[j] = dhn[j] * d5__rnn_apply_grad(r, w, 0, cache[j]);
    d5__rnn_input_back(r, w, 0, dA, x, dx);
    d5__rnn_recur_back(r, w, 0, dA, h, dh);
}

static const d5_rnn_cell rnn_cell = {"RNN", 1, 1, {"Tanh"}, 6, 2, 1, 3.0, rnn_step, rnn_back};

static d5_status rnn_create(const d5_op_create_args *args, void **state)
{
    return d5__rnn_create(&rnn_cell, args->inputs, args->ninputs, args->attrs, args->outputs,
                          args->noutputs, state);
}

D5_REF_OPERATOR(RNN, 3, 6, 1, 2, rnn_create, d5__rnn_forward, d5__rnn_backward, NULL,
                d5__rnn_flops);
