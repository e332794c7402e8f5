/* ReduceMean (ONNX opsets 1 to 18): the mean of data over `axes` (negative
 * axes count from the end): before opset 18 the attribute axes, from opset 18
 * the optional second input (int64, known at create) with
 * noop_with_empty_axes (default 0: no axes reduce every axis; 1: none).
 * keepdims (default 1) keeps reduced axes with size 1. Integer data is
 * averaged in double precision and truncated.
 * https://onnx.ai/onnx/operators/onnx__ReduceMean.html */
#include "reduce.h"

static d5_status reducemean_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                   d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    return d5__reduce_create("ReduceMean", in, nin, attrs, out, state);
}

static d5_status reducemean_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                    int32_t nout)
{
    (void)nin;
    (void)nout;
    const d5_reduce *r = state;
    for (int64_t o = 0; o < out[0].numel; o++) out[0].data[o] = 0;
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[d5__reduce_index(r, i)] += in[0].data[i];
    for (int64_t o = 0; o < out[0].numel; o++) out[0].data[o] /= (double)r->count;
    return D5_OK;
}

/* Every input element gets the gradient of its mean divided by the count. */
static d5_status reducemean_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                     int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    (void)out;
    const d5_reduce *r = state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] += gout[0].data[d5__reduce_index(r, i)] / (double)r->count;
    return D5_OK;
}

static double reducemean_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                               const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&in[0]) + (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(ReduceMean, 1, 2, 1, 1, reducemean_create, reducemean_forward, reducemean_backward,
                NULL, reducemean_flops);
