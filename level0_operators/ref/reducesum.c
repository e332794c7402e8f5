/* ReduceSum (ONNX opsets 1 to 13): sums data over `axes` (negative axes count
 * from the end): from opset 13 the optional second input (int64, known at
 * create), before it the attribute axes. keepdims (default 1) keeps reduced
 * axes with size 1; with no axes every axis is reduced, or, from opset 13,
 * none when noop_with_empty_axes (default 0) is 1.
 * https://onnx.ai/onnx/operators/onnx__ReduceSum.html */
#include "reduce.h"

static d5_status reducesum_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                  d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    return d5__reduce_create("ReduceSum", in, nin, attrs, out, state);
}

static d5_status reducesum_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                   int32_t nout)
{
    (void)nin;
    (void)nout;
    const d5_reduce *r = state;
    for (int64_t o = 0; o < out[0].numel; o++) out[0].data[o] = 0;
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[d5__reduce_index(r, i)] += in[0].data[i];
    return D5_OK;
}

/* Every input element gets the gradient of the sum it went into. */
static d5_status reducesum_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                    int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    (void)out;
    const d5_reduce *r = state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] += gout[0].data[d5__reduce_index(r, i)];
    return D5_OK;
}

static double reducesum_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                              const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)out;
    (void)nout;
    return (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(ReduceSum, 1, 2, 1, 1, reducesum_create, reducesum_forward, reducesum_backward,
                NULL, reducesum_flops);
