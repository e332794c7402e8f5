/* MeanSquaredError: d5's own training loss, not an ONNX operator. Given a
 * prediction P and a target T of the same shape (no broadcasting), the
 * squared differences (P - T)^2 are returned as they are (reduction "none",
 * the inputs' shape), summed ("sum", a scalar) or averaged over every element
 * ("mean", the default, a scalar). Differentiable with respect to both inputs:
 * dP = -dT = 2 (P - T) times the output gradient (divided by the element
 * count for the mean). */
#include "reduce.h"

static d5_status mse_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_loss_reduction r;
    d5_status s = d5__need_float("MeanSquaredError", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("MeanSquaredError", in, nin, 1);
    if (s == D5_OK) s = d5__loss_reduction("MeanSquaredError", attrs, &r);
    if (s != D5_OK) return s;
    const d5_tensor_desc *p = &in[0].desc, *t = &in[1].desc;
    if (p->dtype != t->dtype)
        return d5_error(D5_ERR_INVALID, "MeanSquaredError: inputs have data types %s and %s",
                        d5_dtype_name((d5_dtype)p->dtype), d5_dtype_name((d5_dtype)t->dtype));
    if (!d5__same_shape(p, t)) {
        char a[96], b[96];
        d5__shape_str(p, a, sizeof a);
        d5__shape_str(t, b, sizeof b);
        return d5_error(D5_ERR_SHAPE,
                        "MeanSquaredError: prediction %s and target %s differ in shape", a, b);
    }
    if (r == D5_LOSS_NONE)
        out[0] = *p;
    else
        out[0].ndim = 0;
    return d5__ref_state(state, &r, sizeof r, "MeanSquaredError");
}

static d5_status mse_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    d5_loss_reduction r = *(const d5_loss_reduction *)state;
    double sum = 0;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double e = in[0].data[i] - in[1].data[i];
        if (r == D5_LOSS_NONE) out[0].data[i] = e * e;
        sum += e * e;
    }
    if (r == D5_LOSS_SUM) out[0].data[0] = sum;
    if (r == D5_LOSS_MEAN) out[0].data[0] = sum / (double)in[0].numel;
    return D5_OK;
}

static d5_status mse_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    d5_loss_reduction r = *(const d5_loss_reduction *)state;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double g = r == D5_LOSS_NONE  ? gout[0].data[i]
                   : r == D5_LOSS_SUM ? gout[0].data[0]
                                      : gout[0].data[0] / (double)in[0].numel;
        double d = 2 * (in[0].data[i] - in[1].data[i]) * g;
        if (gin[0].data) gin[0].data[i] += d;
        if (gin[1].data) gin[1].data[i] -= d;
    }
    return D5_OK;
}

static double mse_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return 3.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(MeanSquaredError, 2, 2, 1, 1, mse_create, mse_forward, mse_backward, NULL,
                mse_flops);
