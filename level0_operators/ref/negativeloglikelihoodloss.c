/* NegativeLogLikelihoodLoss (ONNX opset 13; opset 22 only adds data types):
 * loss[n][d] = -input[n][target[n][d]][d] * weight[target[n][d]] for an input
 * of log-probabilities (N, C) or (N, C, D1..Dk) and an int32 or int64 target
 * (N) or (N, D1..Dk) with values in [0, C) or equal to ignore_index (optional
 * attribute; such positions have loss 0 and weight 0). weight (optional input,
 * (C)) defaults to ones. reduction: "none" (the loss per position, target's
 * shape), "sum", or "mean" (the default: the sum divided by the sum of the
 * weights of the positions not ignored; NaN when that is 0). A target outside
 * [0, C) that is not ignored is D5_ERR_RANGE at run time.
 *
 * Gradients: input[n][t][d] gets -w[t] times the loss gradient at (n, d)
 * (divided by the weight sum for "mean"); weight[c] gets -input[n][c][d] at
 * every position with target c, and for "mean" also -mean / weight sum.
 * https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html */
#include "reduce.h"

typedef struct nll {
    int64_t n, c, d; /* batch, classes, positions per sample (D1 * ... * Dk) */
    d5_loss_reduction reduction;
    int has_ignore;
    int64_t ignore_index;
} nll;

#define OP "NegativeLogLikelihoodLoss"

static d5_status nll_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    nll g = {0};
    d5_status s = d5__need_float(OP, in, nin, 0);
    if (s == D5_OK) s = d5__loss_reduction(OP, attrs, &g.reduction);
    if (s == D5_OK && d5_attrs_find(attrs, "ignore_index")) {
        g.has_ignore = 1;
        s = d5_attrs_int(attrs, "ignore_index", 0, &g.ignore_index);
    }
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, OP ": input 1 (target) is required");
    const d5_tensor_desc *x = &in[0].desc, *t = &in[1].desc;
    if (t->dtype != D5_I64 && t->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID, OP ": target has data type %s, expected int64 or int32",
                        d5_dtype_name((d5_dtype)t->dtype));
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, OP ": input has %d dims, expected (N, C) or (N, C, D1..Dk)",
                        (int)x->ndim);
    char xs[96], ts[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(t, ts, sizeof ts);
    int same = t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
    for (int32_t i = 1; same && i < t->ndim; i++) same = t->shape[i] == x->shape[i + 1];
    if (!same)
        return d5_error(D5_ERR_SHAPE,
                        OP ": target %s does not match input %s (expected input's shape without "
                           "axis 1)",
                        ts, xs);
    g.n = x->shape[0];
    g.c = x->shape[1];
    g.d = 1;
    for (int32_t i = 2; i < x->ndim; i++) g.d *= x->shape[i];
    if (d5__has_input(in, nin, 2)) {
        s = d5__need_float(OP, in, nin, 2);
        if (s != D5_OK) return s;
        if (in[2].desc.dtype != x->dtype)
            return d5_error(D5_ERR_INVALID, OP ": weight has data type %s, input %s",
                            d5_dtype_name((d5_dtype)in[2].desc.dtype),
                            d5_dtype_name((d5_dtype)x->dtype));
        if (in[2].desc.ndim != 1 || in[2].desc.shape[0] != g.c) {
            char ws[96];
            d5__shape_str(&in[2].desc, ws, sizeof ws);
            return d5_error(D5_ERR_SHAPE,
                            OP ": weight has shape %s, expected [%lld] (one per class)", ws,
                            (long long)g.c);
        }
    }
    out[0].ndim = 0;
    if (g.reduction == D5_LOSS_NONE) {
        out[0].ndim = t->ndim;
        for (int32_t i = 0; i < t->ndim; i++) out[0].shape[i] = t->shape[i];
    }
    nll *st = d5_alloc(sizeof *st, OP);
    if (!st) return D5_ERR_NOMEM;
    *st = g;
    *state = st;
    return D5_OK;
}

/* The class of position j (sample j / d, position j % d), or -1 when it is
 * ignore_index. */
static d5_status class_at(const nll *g, const d5_rt *target, int64_t j, int64_t *cls)
{
    return d5__loss_class(OP, "target", target, j, g->c, g->has_ignore, g->ignore_index, cls);
}

/* The flat input index of class c at position j. */
static int64_t at(const nll *g, int64_t j, int64_t c)
{
    return (j / g->d * g->c + c) * g->d + j % g->d;
}

/* The sum of the weighted losses and of the weights; per-position losses into
 * `loss` when not NULL. */
static d5_status totals(const nll *g, const d5_rt *in, int32_t nin, double *loss, double *sum,
                        double *wsum)
{
    *sum = *wsum = 0;
    for (int64_t j = 0; j < g->n * g->d; j++) {
        int64_t cls;
        d5_status s = class_at(g, &in[1], j, &cls);
        if (s != D5_OK) return s;
        double w = d5__loss_weight(in, nin, cls), l = cls < 0 ? 0 : -w * in[0].data[at(g, j, cls)];
        if (loss) loss[j] = l;
        *sum += l;
        *wsum += w;
    }
    return D5_OK;
}

static d5_status nll_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const nll *g = state;
    double sum, wsum;
    int none = g->reduction == D5_LOSS_NONE;
    d5_status s = totals(g, in, nin, none ? out[0].data : NULL, &sum, &wsum);
    if (s != D5_OK) return s;
    if (!none) out[0].data[0] = g->reduction == D5_LOSS_SUM ? sum : sum / wsum;
    return D5_OK;
}

static d5_status nll_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const nll *g = state;
    double sum, wsum;
    d5_status s = totals(g, in, nin, NULL, &sum, &wsum);
    if (s != D5_OK) return s;
    int none = g->reduction == D5_LOSS_NONE, mean = g->reduction == D5_LOSS_MEAN;
    int has_weight = nin > 2 && in[2].data;
    for (int64_t j = 0; j < g->n * g->d; j++) {
        int64_t cls;
        s = class_at(g, &in[1], j, &cls);
        if (s != D5_OK) return s;
        if (cls < 0) continue;
        double dl = none ? gout[0].data[j] : gout[0].data[0];
        if (mean) dl /= wsum;
        double x = in[0].data[at(g, j, cls)];
        if (gin[0].data) gin[0].data[at(g, j, cls)] -= dl * d5__loss_weight(in, nin, cls);
        /* The mean also depends on the weight through its denominator. */
        if (has_weight && gin[2].data) gin[2].data[cls] += dl * (-x - (mean ? out[0].data[0] : 0));
    }
    return D5_OK;
}

D5_REF_OPERATOR(NegativeLogLikelihoodLoss, 2, 3, 1, 1, nll_create, nll_forward, nll_backward, NULL,
                NULL);
