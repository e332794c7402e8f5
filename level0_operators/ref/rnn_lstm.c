/* LSTM (ONNX opsets 7 to 22): a one-layer long short-term memory. With gates
 * i (input), o (output), f (forget) and c (cell) in the order of W, R and B,
 * peepholes P = [Pi, Po, Pf], and activations f (Sigmoid), g (Tanh) and h
 * (Tanh) by default:
 *   i_t = f(X_t Wi^T + H_{t-1} Ri^T + Pi . C_{t-1} + Wbi + Rbi)
 *   f_t = f(X_t Wf^T + H_{t-1} Rf^T + Pf . C_{t-1} + Wbf + Rbf)
 *   c_t = g(X_t Wc^T + H_{t-1} Rc^T + Wbc + Rbc)
 *   C_t = f_t . C_{t-1} + i_t . c_t
 *   o_t = f(X_t Wo^T + H_{t-1} Ro^T + Po . C_t + Wbo + Rbo)
 *   H_t = o_t . h(C_t)
 * With input_forget = 1 the forget gate is coupled to the input gate,
 * f_t = 1 - i_t (as ONNX Runtime does), and Wf, Rf, Wbf, Rbf and Pf are not
 * used. Inputs X, W, R, optional B, sequence_lens, initial_h, initial_c and P;
 * outputs Y and optional Y_h and Y_c. The attributes, directions, sequence
 * lengths and layouts are in rnn_common.c.
 * https://onnx.ai/onnx/operators/onnx__LSTM.html */
#include "rnn.h"

enum { IG, OG, FG, CG }; /* gate rows of W and R */
enum { PI, PO, PF };     /* rows of P */

/* cache: the raw pre-activations ai, ao, af, ac, then C_t. */
static void lstm_step(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                      const double *c, double *hn, double *cn, double *cache)
{
    const int64_t H = r->H;
    double *ai = cache, *ao = cache + H, *af = cache + 2 * H, *ac = cache + 3 * H,
           *C = cache + 4 * H;
    const int gates[4] = {IG, OG, FG, CG};
    double *pre[4] = {ai, ao, af, ac};
    for (int k = 0; k < 4; k++) {
        if (gates[k] == FG && r->input_forget) continue;
        d5__rnn_input(r, w, gates[k], x, pre[k]);
        d5__rnn_recur(r, w, gates[k], h, pre[k]);
    }
    for (int64_t j = 0; j < H; j++) {
        if (w->P) {
            ai[j] += w->P[PI * H + j] * c[j];
            if (!r->input_forget) af[j] += w->P[PF * H + j] * c[j];
        }
        double i = d5__rnn_apply(r, w, 0, ai[j]);
        double f = r->input_forget ? 1 - i : d5__rnn_apply(r, w, 0, af[j]);
        C[j] = f * c[j] + i * d5__rnn_apply(r, w, 1, ac[j]);
        if (r->input_forget) af[j] = 0;
        if (w->P) ao[j] += w->P[PO * H + j] * C[j];
        hn[j] = d5__rnn_apply(r, w, 0, ao[j]) * d5__rnn_act(&w->act[2], C[j]);
        cn[j] = C[j];
    }
}

static void lstm_back(const d5_rnn *r, const d5_rnn_dir *w, const double *x, const double *h,
                      const double *c, const double *cache, const double *dhn, const double *dcn,
                      double *dx, double *dh, double *dc, double *scratch)
{
    const int64_t H = r->H;
    const double *ai = cache, *ao = cache + H, *af = cache + 2 * H, *ac = cache + 3 * H,
                 *C = cache + 4 * H;
    double *dAi = scratch, *dAo = scratch + H, *dAf = scratch + 2 * H, *dAc = scratch + 3 * H;
    for (int64_t j = 0; j < H; j++) {
        double i = d5__rnn_apply(r, w, 0, ai[j]), o = d5__rnn_apply(r, w, 0, ao[j]);
        double f = r->input_forget ? 1 - i : d5__rnn_apply(r, w, 0, af[j]);
        double cc = d5__rnn_apply(r, w, 1, ac[j]);
        double hC = d5__rnn_act(&w->act[2], C[j]);
        dAo[j] = dhn[j] * hC * d5__rnn_apply_grad(r, w, 0, ao[j]);
        double dC = dcn[j] + dhn[j] * o * d5__rnn_act_grad(&w->act[2], C[j]);
        if (w->P) dC += dAo[j] * w->P[PO * H + j];
        double di = dC * cc, df = dC * c[j];
        dc[j] += dC * f;
        if (r->input_forget) {
            di -= df;
            df = 0;
        }
        dAi[j] = di * d5__rnn_apply_grad(r, w, 0, ai[j]);
        dAf[j] = r->input_forget ? 0 : df * d5__rnn_apply_grad(r, w, 0, af[j]);
        dAc[j] = dC * i * d5__rnn_apply_grad(r, w, 1, ac[j]);
        if (w->P) {
            dc[j] += dAi[j] * w->P[PI * H + j] + dAf[j] * w->P[PF * H + j];
            if (w->dP) {
                w->dP[PI * H + j] += dAi[j] * c[j];
                w->dP[PF * H + j] += dAf[j] * c[j];
                w->dP[PO * H + j] += dAo[j] * C[j];
            }
        }
    }
    const int gates[4] = {IG, OG, FG, CG};
    const double *dA[4] = {dAi, dAo, dAf, dAc};
    for (int k = 0; k < 4; k++) {
        d5__rnn_input_back(r, w, gates[k], dA[k], x, dx);
        d5__rnn_recur_back(r, w, gates[k], dA[k], h, dh);
    }
}

static const d5_rnn_cell lstm_cell = {
    "LSTM", 4, 3, {"Sigmoid", "Tanh", "Tanh"}, 8, 3, 5, 16.0, lstm_step, lstm_back};

static d5_status lstm_create(const d5_op_create_args *args, void **state)
{
    return d5__rnn_create(&lstm_cell, args->inputs, args->ninputs, args->attrs, args->outputs,
                          args->noutputs, state);
}

D5_REF_OPERATOR(LSTM, 3, 8, 1, 3, lstm_create, d5__rnn_forward, d5__rnn_backward, NULL,
                d5__rnn_flops);
