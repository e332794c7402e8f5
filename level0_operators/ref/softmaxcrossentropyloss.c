/* SoftmaxCrossEntropyLoss (ONNX opset 13): the negative log-likelihood of
 * `labels` under softmax(scores) along the class axis 1. scores is (N, C) or
 * (N, C, D1..Dk); labels (int64 or int32) is (N) or (N, D1..Dk) with values in
 * [0, C) or equal to ignore_index; weights (optional, (C)) scale each
 * position's loss by the weight of its label. reduction: "none" (the loss per
 * position, labels' shape), "sum", or "mean" (default: the sum divided by the
 * sum of the weights of the positions not ignored, their count without
 * weights). Ignored positions have loss 0. The optional second output is
 * log_prob, log(softmax(scores)) along axis 1. Differentiable with respect to
 * scores and weights.
 * https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html */
#include "reduce.h"

#include <math.h>

typedef struct sce {
    int64_t n, c, d; /* batch, classes, positions per sample (D1 * ... * Dk) */
    d5_loss_reduction reduction;
    int has_ignore;
    int64_t ignore_index;
} sce;

static d5_status sce_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    sce g = {0};
    d5_status s = d5__need_float("SoftmaxCrossEntropyLoss", in, nin, 0);
    if (s == D5_OK) s = d5__loss_reduction("SoftmaxCrossEntropyLoss", attrs, &g.reduction);
    if (s == D5_OK && d5_attrs_find(attrs, "ignore_index")) {
        g.has_ignore = 1;
        s = d5_attrs_int(attrs, "ignore_index", 0, &g.ignore_index);
    }
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, "SoftmaxCrossEntropyLoss: input 1 (labels) is required");
    const d5_tensor_desc *x = &in[0].desc, *t = &in[1].desc;
    if (t->dtype != D5_I64 && t->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "SoftmaxCrossEntropyLoss: labels have data type %s, expected int64 or "
                        "int32",
                        d5_dtype_name((d5_dtype)t->dtype));
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        "SoftmaxCrossEntropyLoss: scores has %d dims, expected (N, C) or "
                        "(N, C, D1..Dk)",
                        (int)x->ndim);
    char xs[96], ts[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(t, ts, sizeof ts);
    int same = t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
    for (int32_t i = 1; same && i < t->ndim; i++) same = t->shape[i] == x->shape[i + 1];
    if (!same)
        return d5_error(D5_ERR_SHAPE,
                        "SoftmaxCrossEntropyLoss: labels %s do not match scores %s (expected "
                        "scores' shape without axis 1)",
                        ts, xs);
    g.n = x->shape[0];
    g.c = x->shape[1];
    if (g.c < 1)
        return d5_error(D5_ERR_SHAPE, "SoftmaxCrossEntropyLoss: scores %s has no classes", xs);
    g.d = 1;
    for (int32_t i = 2; i < x->ndim; i++) g.d *= x->shape[i];
    if (d5__has_input(in, nin, 2)) {
        s = d5__need_float("SoftmaxCrossEntropyLoss", in, nin, 2);
        if (s != D5_OK) return s;
        if (in[2].desc.dtype != x->dtype)
            return d5_error(
                D5_ERR_INVALID, "SoftmaxCrossEntropyLoss: weights have data type %s, scores %s",
                d5_dtype_name((d5_dtype)in[2].desc.dtype), d5_dtype_name((d5_dtype)x->dtype));
        if (in[2].desc.ndim != 1 || in[2].desc.shape[0] != g.c) {
            char ws[96];
            d5__shape_str(&in[2].desc, ws, sizeof ws);
            return d5_error(
                D5_ERR_SHAPE,
                "SoftmaxCrossEntropyLoss: weights have shape %s, expected [%lld] (one per class)",
                ws, (long long)g.c);
        }
    }
    if (g.reduction == D5_LOSS_NONE) {
        out[0].ndim = t->ndim;
        for (int32_t i = 0; i < t->ndim; i++) out[0].shape[i] = t->shape[i];
    } else {
        out[0].ndim = 0;
    }
    if (nout > 1) out[1] = *x;
    sce *st = d5_alloc(sizeof *st, "SoftmaxCrossEntropyLoss");
    if (!st) return D5_ERR_NOMEM;
    *st = g;
    *state = st;
    return D5_OK;
}

/* log(sum_c exp(x[c * d])) over the classes of one position, computed stably. */
static double log_sum_exp(const double *x, int64_t c, int64_t d)
{
    double m = x[0];
    for (int64_t k = 1; k < c; k++) m = fmax(m, x[k * d]);
    double sum = 0;
    for (int64_t k = 0; k < c; k++) sum += exp(x[k * d] - m);
    return m + log(sum);
}

/* The label of position j, or -1 when it is ignore_index. */
static d5_status label_at(const sce *g, const d5_rt *labels, int64_t j, int64_t *label)
{
    return d5__loss_class("SoftmaxCrossEntropyLoss", "label", labels, j, g->c, g->has_ignore,
                          g->ignore_index, label);
}

/* Fills loss[j] = weight * -log_prob[label] per position (when `loss` is not
 * NULL) and log_prob (when not NULL); returns the sum of the losses and of the
 * weights. */
static d5_status sce_losses(const sce *g, const d5_rt *in, int32_t nin, double *loss,
                            double *log_prob, double *total, double *wsum)
{
    *total = 0;
    *wsum = 0;
    for (int64_t i = 0; i < g->n; i++)
        for (int64_t p = 0; p < g->d; p++) {
            int64_t base = i * g->c * g->d + p, j = i * g->d + p, label;
            const double *x = in[0].data + base;
            double lse = log_sum_exp(x, g->c, g->d);
            if (log_prob)
                for (int64_t k = 0; k < g->c; k++) log_prob[base + k * g->d] = x[k * g->d] - lse;
            d5_status s = label_at(g, &in[1], j, &label);
            if (s != D5_OK) return s;
            double w = d5__loss_weight(in, nin, label);
            double l = label < 0 ? 0 : w * (lse - x[label * g->d]);
            if (loss) loss[j] = l;
            *total += l;
            *wsum += w;
        }
    return D5_OK;
}

static d5_status sce_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    const sce *g = state;
    double total, wsum;
    d5_status s = sce_losses(g, in, nin, g->reduction == D5_LOSS_NONE ? out[0].data : NULL,
                             nout > 1 ? out[1].data : NULL, &total, &wsum);
    if (s != D5_OK) return s;
    if (g->reduction == D5_LOSS_SUM) out[0].data[0] = total;
    if (g->reduction == D5_LOSS_MEAN) out[0].data[0] = total / wsum;
    return D5_OK;
}

/* For a position with label y, weight w and loss gradient gl (the output's
 * gradient, divided by the sum of the weights for the mean):
 * dscores[k] = gl * w * (softmax[k] - [k == y]) + glp[k] - softmax[k] * sum(glp),
 * where glp is the gradient of log_prob; dweights[y] += gl * nll, and for the
 * mean, whose denominator holds the weights too, gl * (nll - mean). */
static d5_status sce_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    const sce *g = state;
    double total, wsum;
    d5_status s = sce_losses(g, in, nin, NULL, NULL, &total, &wsum);
    if (s != D5_OK) return s;
    double mean = total / wsum;
    for (int64_t i = 0; i < g->n; i++)
        for (int64_t p = 0; p < g->d; p++) {
            int64_t base = i * g->c * g->d + p, j = i * g->d + p, label;
            const double *x = in[0].data + base;
            double lse = log_sum_exp(x, g->c, g->d);
            (void)label_at(g, &in[1], j, &label);
            double w = d5__loss_weight(in, nin, label);
            double gl = g->reduction == D5_LOSS_NONE  ? gout[0].data[j]
                        : g->reduction == D5_LOSS_SUM ? gout[0].data[0]
                                                      : gout[0].data[0] / wsum;
            double glp_sum = 0;
            if (nout > 1)
                for (int64_t k = 0; k < g->c; k++) glp_sum += gout[1].data[base + k * g->d];
            if (gin[0].data)
                for (int64_t k = 0; k < g->c; k++) {
                    double sm = exp(x[k * g->d] - lse), d = 0;
                    if (label >= 0) d += gl * w * (sm - (k == label));
                    if (nout > 1) d += gout[1].data[base + k * g->d] - sm * glp_sum;
                    gin[0].data[base + k * g->d] += d;
                }
            if (nin > 2 && gin[2].data && label >= 0) {
                double nll = lse - x[label * g->d];
                gin[2].data[label] += gl * (g->reduction == D5_LOSS_MEAN ? nll - mean : nll);
            }
        }
    return D5_OK;
}

static double sce_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return 4.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(SoftmaxCrossEntropyLoss, 2, 3, 1, 2, sce_create, sce_forward, sce_backward, NULL,
                sce_flops);
