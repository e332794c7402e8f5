/* BitShift (ONNX opset 11): Z = X << Y (direction "LEFT") or X >> Y ("RIGHT"),
 * element-wise with numpy broadcasting, on unsigned integers (uint8, uint16,
 * uint32 or uint64; X and Y of one type, Z of it too). Bits shifted out are
 * lost: a left shift wraps modulo 2^bits, and a shift by bits or more gives 0.
 * The ref backend carries values as doubles, so uint64 values are exact up to
 * 2^53. No gradient.
 * https://onnx.ai/onnx/operators/onnx__BitShift.html */
#include "util.h"

#include <string.h>

typedef struct bitshift {
    int left;
    int bits; /* of the data type */
} bitshift;

static d5_status bitshift_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 2 && s == D5_OK; i++)
        s = d5__need_types("BitShift", in, nin, i, D5__UNSIGNED);
    if (s == D5_OK) s = d5__same_type("BitShift", in, nin, 1, 0);
    const char *dir = NULL;
    if (s == D5_OK && !d5_attrs_find(attrs, "direction"))
        return d5_error(D5_ERR_INVALID,
                        "BitShift: attribute direction (LEFT or RIGHT) is required");
    if (s == D5_OK) s = d5_attrs_string(attrs, "direction", "", &dir);
    if (s != D5_OK) return s;
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return d5_error(D5_ERR_INVALID, "BitShift: direction is '%s', expected LEFT or RIGHT", dir);
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    out[0].dtype = in[0].desc.dtype;
    if ((s = d5__broadcast("BitShift", both, 2, &out[0])) != D5_OK) return s;
    bitshift *b = d5_alloc(sizeof *b, "BitShift");
    if (!b) return D5_ERR_NOMEM;
    b->left = strcmp(dir, "LEFT") == 0;
    b->bits = (int)(8 * d5_dtype_size((d5_dtype)in[0].desc.dtype));
    *state = b;
    return D5_OK;
}

/* A value of an unsigned type as carried in a double: in [0, 2^64]. */
static uint64_t to_u64(double v)
{
    return v >= 18446744073709551616.0 ? UINT64_MAX : v > 0 ? (uint64_t)v : 0;
}

static d5_status bitshift_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const bitshift *b = state;
    uint64_t mask = b->bits == 64 ? UINT64_MAX : ((uint64_t)1 << b->bits) - 1;
    for (int64_t i = 0; i < out[0].numel; i++) {
        double xv = in[0].data[d5__broadcast_index(out[0].desc, in[0].desc, i)];
        double yv = in[1].data[d5__broadcast_index(out[0].desc, in[1].desc, i)];
        uint64_t x = to_u64(xv), y = to_u64(yv), z = 0;
        if (y < (uint64_t)b->bits) z = (b->left ? x << y : x >> y) & mask;
        out[0].data[i] = (double)z;
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(BitShift, 2, 2, 1, 1, bitshift_create, bitshift_forward, NULL, NULL);
