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
#include "class_loss.h"

static const d5_class_loss_names names = {.op = "NegativeLogLikelihoodLoss",
                                          .input = "input",
                                          .input_of = "input's",
                                          .target = "target",
                                          .target_value = "target",
                                          .weight = "weight"};

static d5_status nll_create(const d5_op_create_args *args, void **state)
{
    return d5__class_loss_create(&names, args, state);
}

/* The input holds log-probabilities: the loss of class cls is -x[cls]. */
static double nll_of(const d5_class_loss *g, const double *x, int64_t cls, double *log_prob)
{
    (void)log_prob;
    return cls < 0 ? 0 : -x[cls * g->d];
}

static d5_status nll_forward(void *state, const d5_ref_call *call)
{
    return d5__class_loss_forward(state, call, nll_of);
}

static d5_status nll_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const d5_class_loss *g = state;
    double sum, wsum;
    d5_status s = d5__class_loss_totals(g, in, nin, nll_of, NULL, NULL, &sum, &wsum);
    if (s != D5_OK) return s;
    int mean = g->reduction == D5_LOSS_MEAN;
    int has_weight = nin > 2 && in[2].data;
    for (int64_t j = 0; j < g->n * g->d; j++) {
        int64_t cls;
        s = d5__class_loss_class(g, &in[1], j, &cls);
        if (s != D5_OK) return s;
        if (cls < 0) continue;
        double dl = d5__class_loss_grad(g, gout, j, wsum);
        int64_t at = d5__class_loss_base(g, j) + cls * g->d;
        double x = in[0].data[at];
        if (gin[0].data) gin[0].data[at] -= dl * d5__class_loss_weight(in, nin, cls);
        /* The mean also depends on the weight through its denominator. */
        if (has_weight && gin[2].data) gin[2].data[cls] += dl * (-x - (mean ? out[0].data[0] : 0));
    }
    return D5_OK;
}

D5_REF_OPERATOR(NegativeLogLikelihoodLoss, 2, 3, 1, 1, nll_create, nll_forward, nll_backward, NULL,
                NULL);
