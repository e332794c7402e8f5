/* GRU (ONNX opsets 7 to 22): a one-layer gated recurrent unit. With gates z
 * (update), r (reset) and h (hidden) in the order of W, R and B, and
 * activations f (Sigmoid) and g (Tanh) by default:
 *   z_t = f(X_t Wz^T + H_{t-1} Rz^T + Wbz + Rbz)
 *   r_t = f(X_t Wr^T + H_{t-1} Rr^T + Wbr + Rbr)
 *   h_t = g(X_t Wh^T + (r_t . H_{t-1}) Rh^T + Rbh + Wbh)    linear_before_reset = 0
 *   h_t = g(X_t Wh^T + r_t . (H_{t-1} Rh^T + Rbh) + Wbh)    linear_before_reset != 0
 *   H_t = (1 - z_t) . h_t + z_t . H_{t-1}
 * Inputs X, W, R, optional B, sequence_lens and initial_h; outputs Y and
 * optional Y_h. The attributes, directions, sequence lengths and layouts are
 * in rnn_common.c. https://onnx.ai/onnx/operators/onnx__GRU.html */
#include "rnn.h"

enum { Z, RG, HG }; /* gate rows of W and R */

/* cache: the raw pre-activations az, ar, ah, then H_{t-1} Rh^T + Rbh
 * (linear_before_reset) or r_t . H_{t-1}. */
static void gru_step(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                     const double *c, double *hn, double *cn, double *cache)
{
    (void)c;
    (void)cn;
    const int64_t H = r->H;
    double *az = cache, *ar = cache + H, *ah = cache + 2 * H, *v = cache + 3 * H;
    d5__rnn_input(r, w, Z, x, az);
    d5__rnn_recur(r, w, Z, h, az);
    d5__rnn_input(r, w, RG, x, ar);
    d5__rnn_recur(r, w, RG, h, ar);
    d5__rnn_input(r, w, HG, x, ah);
    if (r->lbr) {
        for (int64_t j = 0; j < H; j++) v[j] = 0;
        d5__rnn_recur(r, w, HG, h, v);
        for (int64_t j = 0; j < H; j++) ah[j] += d5__rnn_apply(r, w, 0, ar[j]) * v[j];
    } else {
        for (int64_t j = 0; j < H; j++) v[j] = d5__rnn_apply(r, w, 0, ar[j]) * h[j];
        d5__rnn_recur(r, w, HG, v, ah);
    }
    for (int64_t j = 0; j < H; j++) {
        double z = d5__rnn_apply(r, w, 0, az[j]), hh = d5__rnn_apply(r, w, 1, ah[j]);
        hn[j] = (1 - z) * hh + z * h[j];
    }
}

static void gru_back(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                     const double *c, const double *cache, const double *dhn, const double *dcn,
                     double *dx, double *dh, double *dc, double *scratch)
{
    (void)c;
    (void)dcn;
    (void)dc;
    const int64_t H = r->H;
    const double *az = cache, *ar = cache + H, *ah = cache + 2 * H, *v = cache + 3 * H;
    double *dAz = scratch, *dAr = scratch + H, *dAh = scratch + 2 * H, *dv = scratch + 3 * H;
    for (int64_t j = 0; j < H; j++) {
        double z = d5__rnn_apply(r, w, 0, az[j]), hh = d5__rnn_apply(r, w, 1, ah[j]);
        dAz[j] = dhn[j] * (h[j] - hh) * d5__rnn_apply_grad(r, w, 0, az[j]);
        dAh[j] = dhn[j] * (1 - z) * d5__rnn_apply_grad(r, w, 1, ah[j]);
        dh[j] += dhn[j] * z;
        dv[j] = 0;
    }
    d5__rnn_input_back(r, w, HG, dAh, x, dx);
    if (r->lbr) { /* ah = .. + r . v with v = H_{t-1} Rh^T + Rbh */
        for (int64_t j = 0; j < H; j++) {
            double rr = d5__rnn_apply(r, w, 0, ar[j]);
            dAr[j] = dAh[j] * v[j] * d5__rnn_apply_grad(r, w, 0, ar[j]);
            dv[j] = dAh[j] * rr;
        }
        d5__rnn_recur_back(r, w, HG, dv, h, dh);
    } else { /* ah = .. + v Rh^T + Rbh with v = r . H_{t-1} */
        d5__rnn_recur_back(r, w, HG, dAh, v, dv);
        for (int64_t j = 0; j < H; j++) {
            double rr = d5__rnn_apply(r, w, 0, ar[j]);
            dAr[j] = dv[j] * h[j] * d5__rnn_apply_grad(r, w, 0, ar[j]);
            dh[j] += dv[j] * rr;
        }
    }
    d5__rnn_input_back(r, w, Z, dAz, x, dx);
    d5__rnn_recur_back(r, w, Z, dAz, h, dh);
    d5__rnn_input_back(r, w, RG, dAr, x, dx);
    d5__rnn_recur_back(r, w, RG, dAr, h, dh);
}

static const d5_rnn_cell gru_cell = {"GRU", 3,        2,       {"Sigmoid", "Tanh"}, 6, 2, 4,
                                     12.0,  gru_step, gru_back};

static d5_status gru_create(const d5_op_create_args *args, void **state)
{
    return d5__rnn_create(&gru_cell, args->inputs, args->ninputs, args->attrs, args->outputs,
                          args->noutputs, state);
}

D5_REF_OPERATOR(GRU, 3, 6, 1, 2, gru_create, d5__rnn_forward, d5__rnn_backward, NULL,
                d5__rnn_flops);
