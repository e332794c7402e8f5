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
#include "class_loss.h"

#include <math.h>

static const d5_class_loss_names names = {.op = "SoftmaxCrossEntropyLoss",
                                          .input = "scores",
                                          .input_of = "scores'",
                                          .target = "labels",
                                          .target_value = "label",
                                          .weight = "weights",
                                          .plural = 1,
                                          .min_classes = 1};

static d5_status sce_create(const d5_op_create_args *args, void **state)
{
    d5_status s = d5__class_loss_create(&names, args, state);
    if (s == D5_OK && args->noutputs > 1) args->outputs[1] = args->inputs[0].desc;
    return s;
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

/* The loss of label cls is -log_prob[cls] = log_sum_exp - x[cls]. */
static double sce_of(const d5_class_loss *g, const double *x, int64_t cls, double *log_prob)
{
    double lse = log_sum_exp(x, g->c, g->d);
    if (log_prob)
        for (int64_t k = 0; k < g->c; k++) log_prob[k * g->d] = x[k * g->d] - lse;
    return cls < 0 ? 0 : lse - x[cls * g->d];
}

static d5_status sce_forward(void *state, const d5_ref_call *call)
{
    return d5__class_loss_forward(state, call, sce_of);
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
    const d5_class_loss *g = state;
    double total, wsum;
    d5_status s = d5__class_loss_totals(g, in, nin, sce_of, NULL, NULL, &total, &wsum);
    if (s != D5_OK) return s;
    double mean = total / wsum;
    for (int64_t i = 0; i < g->n; i++)
        for (int64_t p = 0; p < g->d; p++) {
            int64_t base = i * g->c * g->d + p, j = i * g->d + p, label;
            const double *x = in[0].data + base;
            double lse = log_sum_exp(x, g->c, g->d);
            (void)d5__class_loss_class(g, &in[1], j, &label);
            double w = d5__class_loss_weight(in, nin, label);
            double gl = d5__class_loss_grad(g, gout, j, wsum);
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
