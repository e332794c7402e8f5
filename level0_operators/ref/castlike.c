/* CastLike (ONNX opset 15; opset 19's saturate only concerns float8 types,
 * which d5 does not have): converts input 0 to the data type of input 1
 * (target_type, whose values are never read). It is Cast with `to` taken from
 * target_type, and this file hands the work to the reference Cast (cast.c):
 * the same conversions, the same gradient (passed through between floating
 * point types). target_type gets a zero gradient.
 * https://onnx.ai/onnx/operators/onnx__CastLike.html */
#include "util.h"

#include <string.h>

extern const d5_op_desc d5__op_ref_Cast;

/* The ONNX TensorProto.DataType number of each d5 data type the ref backend
 * converts to and from (0: none). */
static int64_t onnx_type(int32_t dtype)
{
    switch (dtype) {
    case D5_F32: return 1;
    case D5_U8: return 2;
    case D5_I8: return 3;
    case D5_I16: return 5;
    case D5_I32: return 6;
    case D5_I64: return 7;
    case D5_BOOL: return 9;
    case D5_F64: return 11;
    default: return 0;
    }
}

static d5_status castlike_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                 d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    static const char *const names[2] = {"input", "target_type"};
    for (int32_t i = 0; i < 2; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "CastLike: input %d (%s) is required", (int)i,
                            names[i]);
        if (!onnx_type(in[i].desc.dtype))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "CastLike (ref): input %d (%s) has data type %s; the ref backend "
                            "casts between float32, float64, integers and bool",
                            (int)i, names[i], d5_dtype_name((d5_dtype)in[i].desc.dtype));
    }
    d5_attr to = {.name = "to", .type = D5_ATTR_INT, .i = onnx_type(in[1].desc.dtype)};
    d5_attrs cast_attrs = {&to, 1};
    return d5__op_ref_Cast.create(in, 1, &cast_attrs, out, nout, state);
}

static d5_status castlike_forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                                  int32_t nout)
{
    (void)nin;
    return d5__op_ref_Cast.forward(state, in, 1, out, nout);
}

static d5_status castlike_backward(void *state, const d5_tensor *gout, int32_t nout,
                                   const d5_tensor *in, int32_t nin, const d5_tensor *out,
                                   d5_tensor *gin)
{
    d5_status s = d5__op_ref_Cast.backward(state, gout, nout, in, 1, out, gin);
    if (s == D5_OK && nin > 1 && gin[1].data) {
        size_t bytes;
        s = d5_tensor_desc_bytes(&gin[1].desc, &bytes);
        if (s == D5_OK) memset(gin[1].data, 0, bytes);
    }
    return s;
}

const d5_op_desc d5__op_ref_CastLike = {D5_OP_ABI_VERSION,
                                        D5_OP_F64 | D5_OP_HAS_BACKWARD,
                                        "CastLike",
                                        "ref",
                                        2,
                                        2,
                                        1,
                                        1,
                                        castlike_create,
                                        castlike_forward,
                                        castlike_backward,
                                        d5__ref_destroy,
                                        d5__ref_cost};
