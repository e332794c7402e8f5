/* Max and Min (ONNX opset 13): the element-wise maximum (minimum) of 1..N
 * inputs of one numeric data type, broadcast together with numpy's rules. A
 * NaN in any input gives NaN, as numpy.maximum does. The gradient goes to the
 * input that supplied each output element (the first one on a tie), summed
 * over the axes that input was broadcast along; the others get none.
 * https://onnx.ai/onnx/operators/onnx__Max.html
 * https://onnx.ai/onnx/operators/onnx__Min.html */
#include "util.h"

#include <math.h>

/* Max (sign 1) or Min (sign -1): the state of both. */
typedef struct extreme {
    const char *name;
    double sign;
} extreme;

static d5_status extreme_create(const extreme *e, const d5_tensor *in, int32_t nin,
                                const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    (void)attrs;
    *state = (void *)e; /* read only */
    return d5__broadcast_create(e->name, in, nin, 0, out);
}

/* The input that supplies output element i: the first holding the largest
 * (sign 1) or smallest (sign -1) value, or the first NaN. */
static int32_t selected(const d5_rt *in, int32_t nin, const d5_rt *out, int64_t i, double sign)
{
    int32_t best = 0;
    double v = in[0].data[d5__broadcast_index(out->desc, in[0].desc, i)];
    for (int32_t k = 1; k < nin && !isnan(v); k++) {
        double w = in[k].data[d5__broadcast_index(out->desc, in[k].desc, i)];
        if (isnan(w) || sign * w > sign * v) {
            best = k;
            v = w;
        }
    }
    return best;
}

static d5_status extreme_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    double sign = ((const extreme *)state)->sign;
    for (int64_t i = 0; i < out[0].numel; i++) {
        const d5_rt *src = &in[selected(in, nin, &out[0], i, sign)];
        out[0].data[i] = src->data[d5__broadcast_index(out[0].desc, src->desc, i)];
    }
    return D5_OK;
}

static d5_status extreme_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    double sign = ((const extreme *)state)->sign;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int32_t k = selected(in, nin, &out[0], i, sign);
        if (gin[k].data)
            gin[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)] += gout[0].data[i];
    }
    return D5_OK;
}

static double extreme_flops(void *state, const d5_ref_shapes *shapes)
{
    int32_t nin = shapes->ninputs;
    const d5_tensor_desc *out = shapes->outputs;
    (void)state;
    return (double)(nin - 1) * (double)d5_tensor_desc_numel(&out[0]);
}

static const extreme max_op = {"Max", 1}, min_op = {"Min", -1};

D5_REF_CREATE_WITH(Max, extreme_create, max_op)
D5_REF_OPERATOR(Max, 1, INT32_MAX, 1, 1, Max_create, extreme_forward, extreme_backward,
                d5__ref_keep, extreme_flops);
D5_REF_CREATE_WITH(Min, extreme_create, min_op)
D5_REF_OPERATOR(Min, 1, INT32_MAX, 1, 1, Min_create, extreme_forward, extreme_backward,
                d5__ref_keep, extreme_flops);
