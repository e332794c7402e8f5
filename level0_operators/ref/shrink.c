/* Shrink (ONNX opset 9): Y = X + bias where X < -lambd, X - bias where
 * X > lambd, and 0 in between, element-wise; attributes lambd (default 0.5)
 * and bias (default 0.0). The input is float32, float64 or an integer type;
 * integer results are truncated toward zero, as numpy's astype does. dY/dX is
 * 1 outside [-lambd, lambd] and 0 inside.
 * https://onnx.ai/onnx/operators/onnx__Shrink.html */
#include "util.h"

typedef struct shrink {
    double lambd, bias;
} shrink;

static d5_status shrink_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Shrink: input 0 is required");
    if (in[0].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "Shrink: input 0 is bool, expected a numeric data type");
    shrink p;
    d5_status s = d5_attrs_float(attrs, "lambd", 0.5, &p.lambd);
    if (s == D5_OK) s = d5_attrs_float(attrs, "bias", 0.0, &p.bias);
    if (s != D5_OK) return s;
    out[0] = in[0].desc;
    return d5__ref_state(state, &p, sizeof p, "Shrink");
}

static d5_status shrink_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const shrink *p = state;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0;
    }
    return D5_OK;
}

static d5_status shrink_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const shrink *p = state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++) {
            double x = in[0].data[i];
            if (x < -p->lambd || x > p->lambd) gin[0].data[i] += gout[0].data[i];
        }
    return D5_OK;
}

D5_REF_OPERATOR(Shrink, 1, 1, 1, 1, shrink_create, shrink_forward, shrink_backward, NULL, NULL);
