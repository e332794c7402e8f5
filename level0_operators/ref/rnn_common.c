/* What the recurrent operators RNN, GRU and LSTM share (ONNX opsets 7 to 22):
 * their attributes and input shapes, the loop over directions, batch rows and
 * time steps, and back-propagation through time. The cells are in rnn.c,
 * rnn_gru.c and rnn_lstm.c.
 *
 * Semantics:
 * - direction: "forward" runs t = 0, 1, ...; "reverse" runs the last step
 *   first; "bidirectional" runs both, direction 0 forward and 1 reverse, with
 *   the weights, biases, peepholes and states of direction d at index d.
 * - sequence_lens (int32 or int64, [batch_size], optional): row b has
 *   L = sequence_lens[b] steps, 0 <= L <= seq_length. Its steps are
 *   t = 0 .. L-1 (reverse: L-1 down to 0); Y is 0 at t >= L, and Y_h and Y_c
 *   are the state after the last step processed: the initial state when L is 0.
 * - layout (opset 14 and later): 0 takes X as [seq_length, batch_size,
 *   input_size] and gives Y as [seq_length, num_directions, batch_size,
 *   hidden_size] and states as [num_directions, batch_size, hidden_size]; 1
 *   takes X as [batch_size, seq_length, input_size], Y as [batch_size,
 *   seq_length, num_directions, hidden_size] and states as [batch_size,
 *   num_directions, hidden_size].
 * - activations: ONNX's list of strings is one d5 STRING attribute of names
 *   separated by commas ("Sigmoid,Tanh,Tanh"), nact names per direction, or
 *   nact for both directions of a bidirectional operator. Names are those of
 *   ONNX (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
 *   HardSigmoid, Elu, Softsign, Softplus), compared without regard to case.
 *   activation_alpha and activation_beta are consumed in the order of the list
 *   by the functions that take them; when they run out the defaults apply:
 *   LeakyRelu 0.01, ThresholdedRelu 1, Elu 1, HardSigmoid 0.2 and 0.5, Affine
 *   1 and 0, ScaledTanh 1 and 1 (the ONNX operators' defaults).
 * - clip bounds every gate's pre-activation to [-clip, clip] before its
 *   activation (LSTM's h(C_t) takes the cell state as it is); its gradient is
 *   0 where the bound cuts.
 * Gradients: X, W, R, B (its two halves get the same gradient, as Wb and Rb
 * add alike, except GRU's Rbh with linear_before_reset), initial_h, initial_c
 * and P; none for sequence_lens. Backward recomputes the forward it needs. */
#include "rnn.h"

#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Activations ---- */

static const struct {
    const char *name;
    int alpha, beta; /* takes alpha, beta */
    double alpha_def, beta_def;
} fns[] = {
    [D5_RNN_RELU] = {"Relu", 0, 0, 0, 0},
    [D5_RNN_TANH] = {"Tanh", 0, 0, 0, 0},
    [D5_RNN_SIGMOID] = {"Sigmoid", 0, 0, 0, 0},
    [D5_RNN_AFFINE] = {"Affine", 1, 1, 1.0, 0.0},
    [D5_RNN_LEAKYRELU] = {"LeakyRelu", 1, 0, 0.01, 0},
    [D5_RNN_THRESHOLDEDRELU] = {"ThresholdedRelu", 1, 0, 1.0, 0},
    [D5_RNN_SCALEDTANH] = {"ScaledTanh", 1, 1, 1.0, 1.0},
    [D5_RNN_HARDSIGMOID] = {"HardSigmoid", 1, 1, 0.2, 0.5},
    [D5_RNN_ELU] = {"Elu", 1, 0, 1.0, 0},
    [D5_RNN_SOFTSIGN] = {"Softsign", 0, 0, 0, 0},
    [D5_RNN_SOFTPLUS] = {"Softplus", 0, 0, 0, 0},
};
#define NFNS ((int)(sizeof fns / sizeof fns[0]))

static double sigmoid(double x)
{
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

double d5__rnn_act(const d5_rnn_act *a, double x)
{
    switch (a->fn) {
    case D5_RNN_RELU: return x > 0 ? x : 0;
    case D5_RNN_TANH: return tanh(x);
    case D5_RNN_SIGMOID: return sigmoid(x);
    case D5_RNN_AFFINE: return a->alpha * x + a->beta;
    case D5_RNN_LEAKYRELU: return x >= 0 ? x : a->alpha * x;
    case D5_RNN_THRESHOLDEDRELU: return x >= a->alpha ? x : 0;
    case D5_RNN_SCALEDTANH: return a->alpha * tanh(a->beta * x);
    case D5_RNN_HARDSIGMOID: return fmin(fmax(a->alpha * x + a->beta, 0), 1);
    case D5_RNN_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case D5_RNN_SOFTSIGN: return x / (1 + fabs(x));
    case D5_RNN_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return x;
    }
}

double d5__rnn_act_grad(const d5_rnn_act *a, double x)
{
    switch (a->fn) {
    case D5_RNN_RELU: return x > 0 ? 1 : 0;
    case D5_RNN_TANH: {
        double t = tanh(x);
        return 1 - t * t;
    }
    case D5_RNN_SIGMOID: {
        double s = sigmoid(x);
        return s * (1 - s);
    }
    case D5_RNN_AFFINE: return a->alpha;
    case D5_RNN_LEAKYRELU: return x >= 0 ? 1 : a->alpha;
    case D5_RNN_THRESHOLDEDRELU: return x >= a->alpha ? 1 : 0;
    case D5_RNN_SCALEDTANH: {
        double t = tanh(a->beta * x);
        return a->alpha * a->beta * (1 - t * t);
    }
    case D5_RNN_HARDSIGMOID: {
        double v = a->alpha * x + a->beta;
        return v > 0 && v < 1 ? a->alpha : 0;
    }
    case D5_RNN_ELU: return x >= 0 ? 1 : a->alpha * exp(x);
    case D5_RNN_SOFTSIGN: {
        double d = 1 + fabs(x);
        return 1 / (d * d);
    }
    case D5_RNN_SOFTPLUS: return sigmoid(x);
    default: return 1;
    }
}

double d5__rnn_clip(const d5_rnn *r, double v)
{
    if (r->clip > 0) return v > r->clip ? r->clip : v < -r->clip ? -r->clip : v;
    return v;
}

int d5__rnn_clipped(const d5_rnn *r, double v)
{
    return r->clip > 0 && (v > r->clip || v < -r->clip);
}

double d5__rnn_apply(const d5_rnn *r, const d5_rnn_dir *w, int k, double raw)
{
    return d5__rnn_act(&w->act[k], d5__rnn_clip(r, raw));
}

double d5__rnn_apply_grad(const d5_rnn *r, const d5_rnn_dir *w, int k, double raw)
{
    return d5__rnn_clipped(r, raw) ? 0 : d5__rnn_act_grad(&w->act[k], raw);
}

/* ---- The matrix-vector products of a gate ---- */

void d5__rnn_input(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *x, double *out)
{
    const int64_t H = r->H, I = r->I;
    for (int64_t j = 0; j < H; j++) {
        const double *row = w->W + (g * H + j) * I;
        double s = w->Wb ? w->Wb[g * H + j] : 0;
        for (int64_t k = 0; k < I; k++) s += row[k] * x[k];
        out[j] = s;
    }
}

void d5__rnn_recur(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *v, double *out)
{
    const int64_t H = r->H;
    for (int64_t j = 0; j < H; j++) {
        const double *row = w->R + (g * H + j) * H;
        double s = w->Rb ? w->Rb[g * H + j] : 0;
        for (int64_t k = 0; k < H; k++) s += row[k] * v[k];
        out[j] += s;
    }
}

/* dv += M^T dA, dM += dA v^T, db += dA for the rows of gate g of a [G*H, n]
 * matrix M. */
static void product_back(int64_t H, int64_t n, int g, const double *M, double *dM, double *db,
                         const double *dA, const double *v, double *dv)
{
    for (int64_t j = 0; j < H; j++) {
        double a = dA[j];
        if (a == 0) continue;
        const double *row = M + (g * H + j) * n;
        if (dv)
            for (int64_t k = 0; k < n; k++) dv[k] += row[k] * a;
        if (dM) {
            double *drow = dM + (g * H + j) * n;
            for (int64_t k = 0; k < n; k++) drow[k] += a * v[k];
        }
        if (db) db[g * H + j] += a;
    }
}

void d5__rnn_input_back(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *dA,
                        const double *x, double *dx)
{
    product_back(r->H, r->I, g, w->W, w->dW, w->dWb, dA, x, dx);
}

void d5__rnn_recur_back(const d5_rnn *r, const d5_rnn_dir *w, int g, const double *dA,
                        const double *v, double *dv)
{
    product_back(r->H, r->H, g, w->R, w->dR, w->dRb, dA, v, dv);
}

/* ---- Attributes and shapes ---- */

static const char *const input_names[8] = {"X",         "W",         "R", "B", "sequence_lens",
                                           "initial_h", "initial_c", "P"};

/* Checks that input i has the shape want[0..ndim-1]; `meaning` names the axes. */
static d5_status want_shape(const char *op, const d5_tensor *in, int32_t i, int32_t ndim,
                            const int64_t *want, const char *meaning)
{
    const d5_tensor_desc *d = &in[i].desc;
    int same = d->ndim == ndim;
    for (int32_t k = 0; same && k < ndim; k++) same = d->shape[k] == want[k];
    if (same) return D5_OK;
    d5_tensor_desc w = {.ndim = ndim};
    for (int32_t k = 0; k < ndim; k++) w.shape[k] = want[k];
    char got[96], exp_[96];
    d5__shape_str(d, got, sizeof got);
    d5__shape_str(&w, exp_, sizeof exp_);
    return d5_error(D5_ERR_SHAPE, "%s: input %d (%s) has shape %s, expected %s (%s)", op, i,
                    input_names[i], got, exp_, meaning);
}

/* Looks an activation name up without regard to case; -1 when none. */
static int find_fn(const char *name, size_t len)
{
    for (int f = 0; f < NFNS; f++) {
        if (strlen(fns[f].name) != len) continue;
        size_t k = 0;
        while (k < len) {
            char a = name[k], b = fns[f].name[k];
            if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
            if (a != b) break;
            k++;
        }
        if (k == len) return f;
    }
    return -1;
}

/* Reads a FLOATS attribute (NULL and 0 when absent). */
static d5_status floats_attr(const char *op, const d5_attrs *attrs, const char *name,
                             const double **v, int64_t *n)
{
    const d5_attr *a = d5_attrs_find(attrs, name);
    *v = NULL;
    *n = 0;
    if (!a) return D5_OK;
    if (a->type != D5_ATTR_FLOATS)
        return d5_error(D5_ERR_INVALID, "%s: attribute %s must be a list of floats", op, name);
    *v = a->floats;
    *n = a->count;
    return D5_OK;
}

/* The activations of every direction, their alpha and beta. */
static d5_status read_activations(const char *op, const d5_attrs *attrs, d5_rnn *r)
{
    const d5_rnn_cell *cell = r->cell;
    int fn[6], n = 0;
    const d5_attr *a = d5_attrs_find(attrs, "activations");
    if (a) {
        if (a->type != D5_ATTR_STRING || !a->s)
            return d5_error(D5_ERR_INVALID,
                            "%s: attribute activations must be a string of names separated by "
                            "commas (\"Sigmoid,Tanh\")",
                            op);
        const char *p = a->s;
        for (;;) {
            while (*p == ' ') p++;
            size_t len = strcspn(p, ",");
            size_t end = len;
            while (end > 0 && p[end - 1] == ' ') end--;
            int f = find_fn(p, end);
            if (f < 0)
                return d5_error(D5_ERR_INVALID,
                                "%s: activation '%.*s' is none of Relu, Tanh, Sigmoid, Affine, "
                                "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                                "Softsign, Softplus",
                                op, (int)(end > 40 ? 40 : end), p);
            if (n == 6) return d5_error(D5_ERR_INVALID, "%s: more than 6 activations", op);
            fn[n++] = f;
            if (!p[len]) break;
            p += len + 1;
        }
        if (n == cell->nact && r->D == 2) { /* one list for both directions */
            for (int k = 0; k < n; k++) fn[n + k] = fn[k];
            n *= 2;
        }
        if (n != cell->nact * r->D)
            return d5_error(D5_ERR_INVALID,
                            "%s: %d activations given, expected %d (%d per direction, %lld "
                            "direction%s)",
                            op, n, (int)(cell->nact * r->D), (int)cell->nact, (long long)r->D,
                            r->D > 1 ? "s" : "");
    } else {
        for (int64_t d = 0; d < r->D; d++)
            for (int k = 0; k < cell->nact; k++)
                fn[n++] = find_fn(cell->defaults[k], strlen(cell->defaults[k]));
    }
    const double *alpha, *beta;
    int64_t na, nb, ka = 0, kb = 0;
    d5_status s = floats_attr(op, attrs, "activation_alpha", &alpha, &na);
    if (s == D5_OK) s = floats_attr(op, attrs, "activation_beta", &beta, &nb);
    if (s != D5_OK) return s;
    for (int k = 0; k < n; k++) {
        d5_rnn_act *act = &r->act[k / cell->nact][k % cell->nact];
        act->fn = fn[k];
        act->alpha = fns[fn[k]].alpha_def;
        act->beta = fns[fn[k]].beta_def;
        if (fns[fn[k]].alpha && ka < na) act->alpha = alpha[ka++];
        if (fns[fn[k]].beta && kb < nb) act->beta = beta[kb++];
    }
    return D5_OK;
}

/* Checks sequence lengths against seq_length (values of input 4). */
static d5_status check_length(const d5_rnn *r, int64_t b, double v)
{
    if (!(v >= 0 && v <= (double)r->T && v == floor(v)))
        return d5_error(D5_ERR_INVALID,
                        "%s: sequence_lens[%lld] = %g is outside [0, %lld] (seq_length)",
                        r->cell->name, (long long)b, v, (long long)r->T);
    return D5_OK;
}

/* Data types, ranks and the attributes that decide shapes. */
static d5_status read_attributes(d5_rnn *r, const d5_tensor *in, int32_t nin, const d5_attrs *attrs)
{
    const char *op = r->cell->name;
    int64_t opset, layout = 0, lbr = 0, forget = 0, hidden = 0;
    d5_status s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    if (opset < 7)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: opset %lld; the ref backend follows opsets 7 and later", op,
                        (long long)opset);
    for (int32_t i = 0; i < 3 && s == D5_OK; i++) s = d5__need_float(op, in, nin, i);
    for (int32_t i = 3; i < nin && s == D5_OK; i++) {
        if (i == 4 || !d5__has_input(in, nin, i)) continue;
        if (in[i].desc.dtype != in[0].desc.dtype)
            s = d5_error(D5_ERR_INVALID, "%s: input %d (%s) has data type %s, X has %s", op, i,
                         input_names[i], d5_dtype_name((d5_dtype)in[i].desc.dtype),
                         d5_dtype_name((d5_dtype)in[0].desc.dtype));
    }
    for (int32_t i = 1; i < 3 && s == D5_OK; i++)
        if (in[i].desc.dtype != in[0].desc.dtype)
            s = d5_error(D5_ERR_INVALID, "%s: input %d (%s) has data type %s, X has %s", op, i,
                         input_names[i], d5_dtype_name((d5_dtype)in[i].desc.dtype),
                         d5_dtype_name((d5_dtype)in[0].desc.dtype));
    for (int32_t i = 0; i < 3 && s == D5_OK; i++)
        if (in[i].desc.ndim != 3)
            s = d5_error(D5_ERR_SHAPE, "%s: input %d (%s) has %d dims, expected 3", op, i,
                         input_names[i], (int)in[i].desc.ndim);
    if (s == D5_OK && d5_attrs_find(attrs, "layout") && opset < 14)
        s = d5_error(D5_ERR_INVALID,
                     "%s: layout is an attribute of opset 14 and later, not of opset %lld", op,
                     (long long)opset);
    if (s == D5_OK) s = d5_attrs_int(attrs, "layout", 0, &layout);
    if (s == D5_OK && layout != 0 && layout != 1)
        s = d5_error(D5_ERR_INVALID, "%s: layout is %lld, expected 0 or 1", op, (long long)layout);
    const char *dir = "forward";
    if (s == D5_OK) s = d5_attrs_string(attrs, "direction", "forward", &dir);
    if (s == D5_OK && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0 &&
        strcmp(dir, "bidirectional") != 0)
        s = d5_error(D5_ERR_INVALID,
                     "%s: direction is '%s', expected forward, reverse or bidirectional", op, dir);
    if (s == D5_OK) s = d5_attrs_float(attrs, "clip", 0, &r->clip);
    if (s == D5_OK && d5_attrs_find(attrs, "clip") && !(r->clip > 0))
        s = d5_error(D5_ERR_INVALID, "%s: clip is %g, expected a positive bound", op, r->clip);
    if (s == D5_OK && r->cell->gates == 3) s = d5_attrs_int(attrs, "linear_before_reset", 0, &lbr);
    if (s == D5_OK && r->cell->gates == 4) s = d5_attrs_int(attrs, "input_forget", 0, &forget);
    if (s == D5_OK) s = d5_attrs_int(attrs, "hidden_size", 0, &hidden);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    r->layout = (int32_t)layout;
    r->T = layout ? x->shape[1] : x->shape[0];
    r->N = layout ? x->shape[0] : x->shape[1];
    r->I = x->shape[2];
    r->H = in[2].desc.shape[2];
    r->D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    r->reverse = strcmp(dir, "reverse") == 0;
    r->lbr = lbr != 0;
    r->input_forget = forget != 0;
    if (d5_attrs_find(attrs, "hidden_size") && hidden != r->H)
        return d5_error(D5_ERR_SHAPE,
                        "%s: hidden_size is %lld but R has shape [.., .., %lld] (its last axis "
                        "is hidden_size)",
                        op, (long long)hidden, (long long)r->H);
    if (r->H < 1) return d5_error(D5_ERR_SHAPE, "%s: hidden_size is 0", op);
    return read_activations(op, attrs, r);
}

/* Every input's shape against the sizes read from X and R. */
static d5_status check_shapes(const d5_rnn *r, const d5_tensor *in, int32_t nin)
{
    const char *op = r->cell->name;
    const int64_t G = r->cell->gates, D = r->D, H = r->H, N = r->N;
    char what[96];
    snprintf(what, sizeof what, "[num_directions, %d*hidden_size, input_size]", (int)G);
    d5_status s = want_shape(op, in, 1, 3, (const int64_t[]){D, G * H, r->I}, what);
    snprintf(what, sizeof what, "[num_directions, %d*hidden_size, hidden_size]", (int)G);
    if (s == D5_OK) s = want_shape(op, in, 2, 3, (const int64_t[]){D, G * H, H}, what);
    snprintf(what, sizeof what, "[num_directions, %d*hidden_size]", (int)(2 * G));
    if (s == D5_OK && d5__has_input(in, nin, 3))
        s = want_shape(op, in, 3, 2, (const int64_t[]){D, 2 * G * H}, what);
    if (s == D5_OK && d5__has_input(in, nin, 4)) {
        if (in[4].desc.dtype != D5_I32 && in[4].desc.dtype != D5_I64)
            return d5_error(D5_ERR_INVALID,
                            "%s: input 4 (sequence_lens) has data type %s, "
                            "expected int32",
                            op, d5_dtype_name((d5_dtype)in[4].desc.dtype));
        s = want_shape(op, in, 4, 1, (const int64_t[]){N}, "[batch_size]");
        for (int64_t b = 0; s == D5_OK && in[4].data && b < N; b++)
            s = check_length(r, b,
                             in[4].desc.dtype == D5_I32 ? (double)((const int32_t *)in[4].data)[b]
                                                        : (double)((const int64_t *)in[4].data)[b]);
    }
    const int64_t state[3] = {r->layout ? N : D, r->layout ? D : N, H};
    const char *state_axes = r->layout ? "[batch_size, num_directions, hidden_size] (layout 1)"
                                       : "[num_directions, batch_size, hidden_size]";
    for (int32_t i = 5; i < 7 && s == D5_OK; i++)
        if (d5__has_input(in, nin, i)) s = want_shape(op, in, i, 3, state, state_axes);
    if (s == D5_OK && d5__has_input(in, nin, 7))
        s = want_shape(op, in, 7, 2, (const int64_t[]){D, 3 * H},
                       "[num_directions, 3*hidden_size]");
    return s;
}

d5_status d5__rnn_create(const d5_rnn_cell *cell, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state)
{
    d5_rnn r;
    memset(&r, 0, sizeof r);
    r.cell = cell;
    d5_status s = read_attributes(&r, in, nin, attrs);
    if (s == D5_OK) s = check_shapes(&r, in, nin);
    if (s != D5_OK) return s;
    int32_t dtype = in[0].desc.dtype;
    if (nout > 0) {
        int64_t y[4] = {r.T, r.D, r.N, r.H}, y1[4] = {r.N, r.T, r.D, r.H};
        s = d5_tensor_desc_make((d5_dtype)dtype, 4, r.layout ? y1 : y, &out[0]);
    }
    int64_t st[3] = {r.D, r.N, r.H}, st1[3] = {r.N, r.D, r.H};
    for (int32_t k = 1; k < nout && s == D5_OK; k++)
        s = d5_tensor_desc_make((d5_dtype)dtype, 3, r.layout ? st1 : st, &out[k]);
    if (s != D5_OK) return s;
    d5_rnn *p = d5_alloc(sizeof *p, cell->name);
    if (!p) return D5_ERR_NOMEM;
    *p = r;
    *state = p;
    return D5_OK;
}

/* ---- The time loop ---- */

/* Offsets of row (t, b) of X, row (t, d, b) of Y and row (d, b) of a state. */
static int64_t x_at(const d5_rnn *r, int64_t t, int64_t b)
{
    return (r->layout ? b * r->T + t : t * r->N + b) * r->I;
}

static int64_t y_at(const d5_rnn *r, int64_t t, int64_t d, int64_t b)
{
    return (r->layout ? (b * r->T + t) * r->D + d : (t * r->D + d) * r->N + b) * r->H;
}

static int64_t state_at(const d5_rnn *r, int64_t d, int64_t b)
{
    return (r->layout ? b * r->D + d : d * r->N + b) * r->H;
}

static const double *given(const d5_rt *t, int32_t n, int32_t i)
{
    return i < n ? t[i].data : NULL;
}

/* Direction d's parameters from the inputs, and its gradients (gin may be NULL). */
static void direction(const d5_rnn *r, int64_t d, const d5_rt *in, int32_t nin, d5_rt *gin,
                      d5_rnn_dir *w)
{
    const int64_t GH = r->cell->gates * r->H;
    const double *B = given(in, nin, 3), *P = given(in, nin, 7);
    memset(w, 0, sizeof *w);
    w->W = in[1].data + d * GH * r->I;
    w->R = in[2].data + d * GH * r->H;
    w->Wb = B ? B + d * 2 * GH : NULL;
    w->Rb = B ? B + d * 2 * GH + GH : NULL;
    w->P = P ? P + d * 3 * r->H : NULL;
    w->act = r->act[d];
    if (!gin) return;
    double *gB = given(gin, nin, 3) ? gin[3].data : NULL, *gP = nin > 7 ? gin[7].data : NULL;
    w->dW = gin[1].data ? gin[1].data + d * GH * r->I : NULL;
    w->dR = gin[2].data ? gin[2].data + d * GH * r->H : NULL;
    w->dWb = gB && B ? gB + d * 2 * GH : NULL;
    w->dRb = gB && B ? gB + d * 2 * GH + GH : NULL;
    w->dP = gP && P ? gP + d * 3 * r->H : NULL;
}

/* Steps of row b, after checking every length. */
static d5_status check_lengths(const d5_rnn *r, const d5_rt *in, int32_t nin)
{
    const double *lens = given(in, nin, 4);
    d5_status s = D5_OK;
    for (int64_t b = 0; lens && s == D5_OK && b < r->N; b++) s = check_length(r, b, lens[b]);
    return s;
}

static int64_t steps(const d5_rnn *r, const d5_rt *in, int32_t nin, int64_t b)
{
    const double *lens = given(in, nin, 4);
    return lens ? (int64_t)lens[b] : r->T;
}

/* The time step that step s of L runs in direction d. */
static int64_t time_of(const d5_rnn *r, int64_t d, int64_t s, int64_t L)
{
    return r->reverse || d == 1 ? L - 1 - s : s;
}

/* The initial state (input i) of row (d, b), or zeros. */
static void initial(const d5_rnn *r, const d5_rt *in, int32_t nin, int32_t i, int64_t d, int64_t b,
                    double *dst)
{
    const double *src = given(in, nin, i);
    if (src)
        memcpy(dst, src + state_at(r, d, b), (size_t)r->H * sizeof *dst);
    else
        memset(dst, 0, (size_t)r->H * sizeof *dst);
}

/* Where run_row keeps a row's states and caches: `slots` hidden states at
 * h + i * H and cell states at c + i * H and slots - 1 caches, taken round
 * robin: every step's (T + 1 states) for back-propagation, two states and one
 * cache for the forward pass. */
typedef struct row_store {
    double *h, *c, *cache;
    int64_t slots;
} row_store;

/* Room for a row_store of `slots` states, and `extra` more doubles after it;
 * NULL when out of memory. */
static double *row_store_alloc(const d5_rnn *r, int64_t slots, size_t extra, const char *what,
                               row_store *st)
{
    const int64_t H = r->H, C = r->cell->cache;
    double *buf =
        d5_alloc(((size_t)(2 * slots * H + (slots - 1) * C * H) + extra) * sizeof *buf, what);
    if (!buf) return NULL;
    *st = (row_store){buf, buf + slots * H, buf + 2 * slots * H, slots};
    return buf;
}

/* The hidden and cell states after step k (0: the initial ones). */
static double *row_h(const d5_rnn *r, const row_store *st, int64_t k)
{
    return st->h + k % st->slots * r->H;
}

static double *row_c(const d5_rnn *r, const row_store *st, int64_t k)
{
    return st->c + k % st->slots * r->H;
}

/* Step k's cache. */
static double *row_cache(const d5_rnn *r, const row_store *st, int64_t k)
{
    return st->cache + k % (st->slots - 1) * r->cell->cache * r->H;
}

/* Runs row b of direction d through its L steps (returned) from its initial
 * states; with y not NULL, also writes each step's hidden state into its
 * row of Y. */
static int64_t run_row(const d5_rnn *r, const d5_rnn_dir *w, const d5_rt *in, int32_t nin,
                       int64_t d, int64_t b, const row_store *st, double *y)
{
    const int64_t L = steps(r, in, nin, b);
    initial(r, in, nin, 5, d, b, row_h(r, st, 0));
    initial(r, in, nin, 6, d, b, row_c(r, st, 0));
    for (int64_t k = 0; k < L; k++) {
        int64_t t = time_of(r, d, k, L);
        double *hn = row_h(r, st, k + 1);
        r->cell->step(r, w, in[0].data + x_at(r, t, b), row_h(r, st, k), row_c(r, st, k), hn,
                      row_c(r, st, k + 1), row_cache(r, st, k));
        if (y) memcpy(y + y_at(r, t, d, b), hn, (size_t)r->H * sizeof *hn);
    }
    return L;
}

d5_status d5__rnn_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    const d5_rnn *r = state;
    const int64_t H = r->H;
    d5_status s = check_lengths(r, in, nin);
    if (s != D5_OK) return s;
    row_store st;
    double *buf = row_store_alloc(r, 2, 0, "RNN state", &st);
    if (!buf) return D5_ERR_NOMEM;
    for (int64_t d = 0; d < r->D; d++) {
        d5_rnn_dir w;
        direction(r, d, in, nin, NULL, &w);
        for (int64_t b = 0; b < r->N; b++) {
            int64_t L = run_row(r, &w, in, nin, d, b, &st, nout > 0 ? out[0].data : NULL);
            for (int64_t t = L; nout > 0 && t < r->T; t++)
                memset(out[0].data + y_at(r, t, d, b), 0, (size_t)H * sizeof(double));
            if (nout > 1)
                memcpy(out[1].data + state_at(r, d, b), row_h(r, &st, L), (size_t)H * sizeof *buf);
            if (nout > 2)
                memcpy(out[2].data + state_at(r, d, b), row_c(r, &st, L), (size_t)H * sizeof *buf);
        }
    }
    d5_free(buf);
    return D5_OK;
}

/* Back-propagation through time, row by row: the forward pass of the row again
 * (states and caches of every step), then the steps in reverse order. */
d5_status d5__rnn_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    const d5_rnn *r = state;
    const int64_t H = r->H, T = r->T, C = r->cell->cache;
    d5_status s = check_lengths(r, in, nin);
    if (s != D5_OK) return s;
    row_store st;
    double *buf = row_store_alloc(r, T + 1, (size_t)(12 * H + r->I), "RNN backward", &st);
    if (!buf) return D5_ERR_NOMEM;
    double *dh = st.cache + T * C * H, *dc = dh + H, *dhp = dc + H, *dcp = dhp + H;
    double *scratch = dcp + H, *dxs = scratch + 8 * H;
    for (int64_t d = 0; d < r->D; d++) {
        d5_rnn_dir w;
        direction(r, d, in, nin, gin, &w);
        for (int64_t b = 0; b < r->N; b++) {
            int64_t L = run_row(r, &w, in, nin, d, b, &st, NULL);
            for (int64_t j = 0; j < H; j++) {
                dh[j] = nout > 1 ? gout[1].data[state_at(r, d, b) + j] : 0;
                dc[j] = nout > 2 ? gout[2].data[state_at(r, d, b) + j] : 0;
            }
            for (int64_t k = L - 1; k >= 0; k--) {
                int64_t t = time_of(r, d, k, L);
                const double *gy = gout[0].data + y_at(r, t, d, b);
                for (int64_t j = 0; j < H; j++) {
                    dh[j] += gy[j];
                    dhp[j] = dcp[j] = 0;
                }
                double *dx = gin[0].data ? gin[0].data + x_at(r, t, b) : dxs;
                r->cell->back(r, &w, in[0].data + x_at(r, t, b), row_h(r, &st, k), row_c(r, &st, k),
                              row_cache(r, &st, k), dh, dc, dx, dhp, dcp, scratch);
                double *swap = dh;
                dh = dhp;
                dhp = swap;
                swap = dc;
                dc = dcp;
                dcp = swap;
            }
            double *g5 = nin > 5 ? gin[5].data : NULL, *g6 = nin > 6 ? gin[6].data : NULL;
            for (int64_t j = 0; j < H; j++) {
                if (g5) g5[state_at(r, d, b) + j] += dh[j];
                if (g6) g6[state_at(r, d, b) + j] += dc[j];
            }
        }
    }
    d5_free(buf);
    return D5_OK;
}

/* The matrix products, 2 * D * T * N * G * H * (I + H), and the cell's
 * element-wise work. */
double d5__rnn_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const d5_rnn *r = state;
    double rows = (double)r->D * (double)r->T * (double)r->N;
    return rows * (2.0 * (double)r->cell->gates * (double)r->H * (double)(r->I + r->H) +
                   r->cell->elementwise * (double)r->H);
}
