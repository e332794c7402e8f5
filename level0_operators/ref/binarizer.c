/* Binarizer (ONNX-ML, domain ai.onnx.ml, opset 1): Y = 1 where X > threshold
 * (the float attribute, default 0.0), else 0 (NaN included), in X's type:
 * float32, float64, int64 or int32. Integers are compared as doubles, as
 * numpy compares an int64 array with a Python float. A step function: no
 * gradient.
 * https://onnx.ai/onnx/operators/onnx_aionnxml_Binarizer.html */
#include "util.h"

typedef struct binarizer {
    double threshold;
} binarizer;

static d5_status binarizer_create(const d5_op_create_args *args, void **state)
{
    d5_dtypes types = D5__DT(D5_F32) | D5__DT(D5_F64) | D5__DT(D5_I64) | D5__DT(D5_I32);
    d5_status s = d5__need_types("Binarizer", args->inputs, args->ninputs, 0, types);
    binarizer b = {0};
    if (s == D5_OK) s = d5_attrs_float(args->attrs, "threshold", 0.0, &b.threshold);
    if (s != D5_OK) return s;
    args->outputs[0] = args->inputs[0].desc;
    return d5__ref_state(state, &b, sizeof b, "Binarizer");
}

static d5_status binarizer_forward(void *state, const d5_ref_call *call)
{
    const binarizer *b = state;
    const double *x = call->inputs[0].data;
    double *y = call->outputs[0].data;
    for (int64_t i = 0; i < call->outputs[0].numel; i++) y[i] = x[i] > b->threshold ? 1.0 : 0.0;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Binarizer, 1, 1, 1, 1, binarizer_create, binarizer_forward, NULL,
                            d5__flops_per_input);
