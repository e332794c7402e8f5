/* Expand (ONNX opset 13): broadcasts the input (any data type) against the
 * 1-d int64 `shape` (known at create) with numpy's rules; the output's shape
 * is the broadcast of both, so a 1 in `shape` keeps the input's dimension and
 * `shape` may have fewer dims than the input. The gradient sums the output
 * gradient over the broadcast dimensions.
 * https://onnx.ai/onnx/operators/onnx__Expand.html */
#include "util.h"

static d5_status expand_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                               d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    int64_t shape[D5_MAX_DIMS], n;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "Expand: input 0 (input) is required");
    d5_status s = d5__const_ints("Expand", in, nin, 1, "shape", shape, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (in[1].desc.ndim != 1)
        return d5_error(D5_ERR_INVALID, "Expand: input 1 (shape) must be 1-d, got %d-d",
                        (int)in[1].desc.ndim);
    d5_tensor_desc target = in[0].desc;
    target.ndim = (int32_t)n;
    for (int64_t i = 0; i < n; i++) {
        if (shape[i] < 0)
            return d5_error(D5_ERR_INVALID, "Expand: shape[%lld] is %lld, expected >= 0",
                            (long long)i, (long long)shape[i]);
        target.shape[i] = shape[i];
    }
    const d5_tensor_desc *both[2] = {&in[0].desc, &target};
    out[0].dtype = in[0].desc.dtype;
    return d5__broadcast("Expand", both, 2, &out[0]);
}

static d5_status expand_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    d5__gather_forward(d5__broadcast_index, in, out);
    return D5_OK;
}

static d5_status expand_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                 int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    d5__gather_backward(d5__broadcast_index, gout, in, out, gin);
    return D5_OK;
}

D5_REF_OPERATOR(Expand, 2, 2, 1, 1, expand_create, expand_forward, expand_backward, NULL, NULL);
