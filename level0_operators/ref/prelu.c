/* PRelu (ONNX opset 16): Y = X where X >= 0 and slope * X where X < 0,
 * element-wise. slope broadcasts to X in one direction (numpy's rules, X's
 * shape unchanged: a per-channel slope is (C, 1, 1) for an (N, C, H, W) X).
 * X and slope share one data type, floating point or a 32- or 64-bit integer
 * (integer products wrap into the type). Gradients: dY/dX is 1 or slope;
 * dY/dslope is X where X < 0, summed over the axes slope was broadcast along.
 * Before opset 7 (PRelu-1 and PRelu-6) slope is one value or one per channel:
 * a 1-d slope of C values applies along axis 1 of X, as (C, 1, ..., 1).
 * https://onnx.ai/onnx/operators/onnx__PRelu.html */
#include "util.h"

/* Before opset 7: the descriptor a per-channel slope of C values is read
 * through, (C, 1, ..., 1); NULL state when slope broadcasts as it is. */
static d5_status channel_slope(const d5_tensor_desc *x, const d5_tensor_desc *slope,
                               const d5_attrs *attrs, void **state)
{
    int64_t opset;
    d5_status s = d5__ref_opset("PRelu", attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK || opset >= 7 || slope->ndim != 1 || x->ndim < 2 || slope->shape[0] == 1 ||
        slope->shape[0] != x->shape[1])
        return s;
    d5_tensor_desc *st = d5_alloc(sizeof *st, "PRelu");
    if (!st) return D5_ERR_NOMEM;
    *st = *slope;
    st->ndim = x->ndim - 1;
    for (int32_t d = 1; d < st->ndim; d++) st->shape[d] = 1;
    *state = st;
    return D5_OK;
}

static d5_status prelu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    for (int32_t i = 0; i < 2; i++) {
        d5_status s = d5__need_input("PRelu", in, nin, i, i ? "slope" : "X");
        if (s == D5_OK) s = d5__need_types("PRelu", in, nin, i, D5__WIDE);
        if (s != D5_OK) return s;
    }
    const d5_tensor_desc *x = &in[0].desc, *slope = &in[1].desc;
    if (slope->dtype != x->dtype)
        return d5_error(D5_ERR_INVALID, "PRelu: slope has data type %s but X has %s",
                        d5_dtype_name((d5_dtype)slope->dtype), d5_dtype_name((d5_dtype)x->dtype));
    d5_status s = channel_slope(x, slope, attrs, state);
    if (s != D5_OK) return s;
    if (*state) slope = *state;
    d5_tensor_desc b = *x;
    const d5_tensor_desc *both[2] = {x, slope};
    s = d5__broadcast("PRelu", both, 2, &b);
    if (s != D5_OK) return s;
    if (!d5__same_shape(&b, x)) {
        char xs[96], ss[96];
        d5__shape_str(x, xs, sizeof xs);
        d5__shape_str(slope, ss, sizeof ss);
        return d5_error(D5_ERR_SHAPE,
                        "PRelu: slope %s does not broadcast to X %s without changing X's shape", ss,
                        xs);
    }
    out[0] = *x;
    return D5_OK;
}

static d5_status prelu_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_tensor_desc *slope = state ? state : in[1].desc;
    for (int64_t i = 0; i < out[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = x < 0 ? x * in[1].data[d5__broadcast_index(out[0].desc, slope, i)] : x;
    }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

static d5_status prelu_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const d5_tensor_desc *slope = state ? state : in[1].desc;
    for (int64_t i = 0; i < out[0].numel; i++) {
        double x = in[0].data[i], g = gout[0].data[i];
        int64_t j = d5__broadcast_index(out[0].desc, slope, i);
        if (gin[0].data) gin[0].data[i] += x < 0 ? g * in[1].data[j] : g;
        if (gin[1].data && x < 0) gin[1].data[j] += g * x;
    }
    return D5_OK;
}

D5_REF_OPERATOR(PRelu, 2, 2, 1, 1, prelu_create, prelu_forward, prelu_backward, NULL, NULL);
