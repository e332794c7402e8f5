/* Tile (ONNX opset 13): repeats the input (any data type) repeats[d] times
 * along each dimension d; `repeats` is a 1-d int64 input with one
 * non-negative value per input dimension, known at create. The output has
 * shape input.shape[d] * repeats[d]. The gradient of each input element is the
 * sum of the output gradients of its copies.
 * https://onnx.ai/onnx/operators/onnx__Tile.html */
#include "util.h"

static d5_status tile_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "Tile: input 0 (input) is required");
    const d5_tensor_desc *x = &in[0].desc;
    int64_t repeats[D5_MAX_DIMS], n;
    d5_status s = d5__const_ints("Tile", in, nin, 1, "repeats", repeats, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (in[1].desc.ndim != 1 || n != x->ndim)
        return d5_error(D5_ERR_INVALID,
                        "Tile: input 1 (repeats) has %lld values in %d dims, expected a 1-d "
                        "tensor of %d (one per input dimension)",
                        (long long)n, (int)in[1].desc.ndim, (int)x->ndim);
    *out = *x;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (repeats[d] < 0)
            return d5_error(D5_ERR_INVALID, "Tile: repeats[%d] is %lld, expected >= 0", (int)d,
                            (long long)repeats[d]);
        out->shape[d] = x->shape[d] * repeats[d];
    }
    return D5_OK;
}

/* The flat index in the input of output element i. */
static int64_t source(const d5_tensor_desc *y, const d5_tensor_desc *x, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int32_t d = y->ndim - 1; d >= 0; d--) {
        int64_t coord = i % y->shape[d];
        i /= y->shape[d];
        idx += coord % x->shape[d] * stride;
        stride *= x->shape[d];
    }
    return idx;
}

static d5_status tile_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    d5__gather_forward(source, in, out);
    return D5_OK;
}

static d5_status tile_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    (void)state;
    d5__gather_backward(source, gout, in, out, gin);
    return D5_OK;
}

D5_REF_OPERATOR(Tile, 2, 2, 1, 1, tile_create, tile_forward, tile_backward, NULL, NULL);
