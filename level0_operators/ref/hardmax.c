/* Hardmax (ONNX opset 13): 1 at the first largest element along `axis`
 * (attribute, default -1; negative counts from the back) and 0 elsewhere, on
 * float32 or float64. Before opset 13 the input is seen as the 2-d
 * [prod(shape[:axis]), prod(shape[axis:])] with axis default 1, and the one
 * is placed in each row of that view. A NaN counts as the largest element. No
 * gradient: the output is flat almost everywhere.
 * https://onnx.ai/onnx/operators/onnx__Hardmax.html */
#include "util.h"

#include <math.h>

static d5_status hardmax_create(const d5_op_create_args *args, void **state)
{
    return d5__axis_view_create("Hardmax", args->inputs, args->ninputs, args->attrs, args->outputs,
                                state);
}

static d5_status hardmax_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_axis_view *v = state;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = 0;
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t k = 0; k < v->inner; k++) {
            int64_t base = o * v->n * v->inner + k, best = 0;
            const double *x = in[0].data + base;
            for (int64_t j = 1; j < v->n && !isnan(x[best * v->inner]); j++) {
                double c = x[j * v->inner];
                if (isnan(c) || c > x[best * v->inner]) best = j;
            }
            if (v->n > 0) out[0].data[base + best * v->inner] = 1;
        }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Hardmax, 1, 1, 1, 1, hardmax_create, hardmax_forward, NULL, NULL);
