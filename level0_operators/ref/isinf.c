/* IsInf (ONNX opset 10; opset 20 only adds float8 types): a bool tensor, true
 * where the float32 or float64 input is infinite; attributes
 * detect_positive and detect_negative (default 1 each) choose which signs
 * count. No gradient.
 * https://onnx.ai/onnx/operators/onnx__IsInf.html */
#include "util.h"

#include <math.h>

typedef struct isinf_state {
    int positive, negative;
} isinf_state;

static d5_status isinf_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t pos, neg;
    d5_status s = d5__need_float("IsInf", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "detect_positive", 1, &pos);
    if (s == D5_OK) s = d5_attrs_int(attrs, "detect_negative", 1, &neg);
    if (s != D5_OK) return s;
    isinf_state *st = d5_alloc(sizeof *st, "IsInf");
    if (!st) return D5_ERR_NOMEM;
    st->positive = pos != 0;
    st->negative = neg != 0;
    *state = st;
    out[0] = in[0].desc;
    out[0].dtype = D5_BOOL;
    return D5_OK;
}

static d5_status isinf_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const isinf_state *st = state;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = isinf(x) && (x > 0 ? st->positive : st->negative);
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(IsInf, 1, 1, 1, 1, isinf_create, isinf_forward, NULL, NULL);
