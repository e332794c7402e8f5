/* BitCast (ONNX opset 26): reinterprets the bits of each element of the input
 * as the data type `to` (an ONNX TensorProto data type number, required),
 * which must have the input's bit width: 64 (float64, int64, uint64), 32
 * (float32, int32, uint32), 16 (float16, bfloat16, int16, uint16), 8 (int8,
 * uint8, bool, the float8 types), 4 (int4, uint4, float4e2m1) or 2 (int2,
 * uint2). No value is converted; bytes are little-endian, as on every host
 * d5 runs on. The output has the input's shape. d5 keeps a 4- or 2-bit
 * element in a byte (include/d5/core.h): its low bits are the pattern, so
 * int4 and int2 results are sign-extended and the others masked. Strings are
 * refused, and complex types, which d5 does not have. Works on the tensors'
 * bytes (not the ref backend's doubles); no gradient.
 * https://onnx.ai/onnx/operators/onnx__BitCast.html */
#include "util.h"

#include <string.h>

/* The d5 type of ONNX data type number `onnx` (cast.c); 0 for none. */
int32_t d5__cast_d5_type(int64_t onnx);

typedef struct bitcast {
    int32_t from, to;
    int64_t numel;
} bitcast;

static d5_status bitcast_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    if (!d5__has_input(in, args->ninputs, 0))
        return d5_error(D5_ERR_INVALID, "BitCast: input 0 is required");
    int32_t from = in[0].desc.dtype;
    if (from == D5_STRING || d5_dtype_size((d5_dtype)from) == 0)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "BitCast: input 0 has data type %s, which has no bits "
                        "to reinterpret",
                        d5_dtype_name((d5_dtype)from));
    if (!d5_attrs_find(args->attrs, "to"))
        return d5_error(D5_ERR_INVALID, "BitCast: attribute 'to' is required");
    int64_t to;
    d5_status s = d5_attrs_int(args->attrs, "to", 0, &to);
    if (s != D5_OK) return s;
    if (to == 14 || to == 15)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "BitCast: to = %lld is a complex type, which d5 does not have",
                        (long long)to);
    int32_t dt = d5__cast_d5_type(to);
    if (!dt || dt == D5_STRING)
        return d5_error(D5_ERR_INVALID,
                        "BitCast: attribute 'to' is %lld, expected an ONNX data type other "
                        "than STRING (1..26)",
                        (long long)to);
    if (d5_dtype_bits((d5_dtype)dt) != d5_dtype_bits((d5_dtype)from))
        return d5_error(D5_ERR_INVALID,
                        "BitCast: input 0 is %s (%d bits) but to = %lld is %s (%d bits); the "
                        "bit widths must be equal",
                        d5_dtype_name((d5_dtype)from), d5_dtype_bits((d5_dtype)from), (long long)to,
                        d5_dtype_name((d5_dtype)dt), d5_dtype_bits((d5_dtype)dt));
    bitcast b = {from, dt, d5_tensor_desc_numel(&in[0].desc)};
    args->outputs[0] = in[0].desc;
    args->outputs[0].dtype = dt;
    return d5__ref_state(state, &b, sizeof b, "BitCast");
}

static d5_status bitcast_forward(void *state, const d5_op_call *call)
{
    const bitcast *b = state;
    const void *x = call->inputs[0].data;
    void *y = call->outputs[0].data;
    int bits = d5_dtype_bits((d5_dtype)b->to);
    if (bits >= 8) {
        memcpy(y, x, (size_t)b->numel * d5_dtype_size((d5_dtype)b->to));
        return D5_OK;
    }
    /* One 4- or 2-bit element per byte: its low bits, sign-extended for the
     * signed types. */
    unsigned mask = (1u << bits) - 1, sign = 1u << (bits - 1);
    int is_signed = b->to == D5_I4 || b->to == D5_I2;
    const uint8_t *src = x;
    uint8_t *dst = y;
    for (int64_t i = 0; i < b->numel; i++) {
        unsigned v = src[i] & mask;
        dst[i] = is_signed ? (uint8_t)(int8_t)((int)(v ^ sign) - (int)sign) : (uint8_t)v;
    }
    return D5_OK;
}

static void bitcast_destroy(void *state)
{
    d5_free(state);
}

/* No arithmetic; the bytes read and written. */
static void bitcast_cost(void *state, double *flops, double *bytes)
{
    const bitcast *b = state;
    *flops = 0;
    *bytes = 2.0 * (double)b->numel * (double)d5_dtype_size((d5_dtype)b->from);
}

/* clang-format off */
const d5_op_desc d5__op_ref_BitCast = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "BitCast", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = bitcast_create, .forward = bitcast_forward, .destroy = bitcast_destroy,
    .cost = bitcast_cost};
/* clang-format on */
