/* CastLike (ONNX opsets 15, 19, 21, 23, 24, 25; saturate from 19, round_mode
 * from 24, both passed on to Cast): converts input 0 to the data type of input 1
 * (target_type, whose values are never read). It is Cast with `to` taken from
 * target_type, and this file hands the work to the reference Cast (cast.c):
 * the same conversions between all of d5's types (to bfloat16 truncated before
 * opset 19, rounded to nearest even from 19 on), the same gradient (passed
 * through between floating-point types). target_type gets a zero gradient.
 * https://onnx.ai/onnx/operators/onnx__CastLike.html */
#include "util.h"

#include <string.h>

extern const d5_op_desc d5__op_ref_Cast;
/* The ONNX data type number of a d5 type (cast.c). */
int64_t d5__cast_onnx_type(int32_t dtype);

static d5_status castlike_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    static const char *const names[2] = {"input", "target_type"};
    for (int32_t i = 0; i < 2; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "CastLike: input %d (%s) is required", (int)i,
                            names[i]);
        if (!d5__cast_onnx_type(in[i].desc.dtype))
            return d5_error(D5_ERR_INVALID, "CastLike: input %d (%s) has invalid data type %d",
                            (int)i, names[i], (int)in[i].desc.dtype);
    }
    /* The opset goes with it: to bfloat16, Cast rounds from opset 19 on. */
    int64_t opset, saturate;
    const char *round_mode = NULL;
    d5_status s = d5__ref_opset("CastLike", args->attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "saturate", 1, &saturate);
    if (s == D5_OK) s = d5_attrs_string(args->attrs, "round_mode", "up", &round_mode);
    if (s != D5_OK) return s;
    /* saturate (opset 19) and round_mode (24) mean what they mean for Cast. */
    d5_attr to[4] = {
        {.name = "to", .type = D5_ATTR_INT, .i = d5__cast_onnx_type(in[1].desc.dtype)},
        {.name = D5__OPSET_ATTR, .type = D5_ATTR_INT, .i = opset},
        {.name = "saturate", .type = D5_ATTR_INT, .i = saturate},
        {.name = "round_mode", .type = D5_ATTR_STRING, .s = round_mode},
    };
    d5_attrs cast_attrs = {to, 4};
    const d5_op_create_args cast = {
        .inputs = in, .ninputs = 1, .outputs = out, .noutputs = nout, .attrs = &cast_attrs};
    return d5__op_ref_Cast.create(&cast, state);
}

static d5_status castlike_forward(void *state, const d5_op_call *call)
{
    d5_op_call cast = *call; /* input 0 only: the target type is no input of Cast */
    cast.ninputs = 1;
    return d5__op_ref_Cast.forward(state, &cast);
}

static d5_status castlike_backward(void *state, const d5_op_call *call)
{
    d5_tensor *gin = call->grad_inputs;
    d5_op_call cast = *call;
    cast.ninputs = 1;
    d5_status s = d5__op_ref_Cast.backward(state, &cast);
    if (s == D5_OK && call->ninputs > 1 && gin[1].data) {
        size_t bytes;
        s = d5_tensor_desc_bytes(&gin[1].desc, &bytes);
        if (s == D5_OK) memset(gin[1].data, 0, bytes);
    }
    return s;
}

static void castlike_destroy(void *state)
{
    d5__op_ref_Cast.destroy(state);
}

static void castlike_cost(void *state, double *flops, double *bytes)
{
    d5__op_ref_Cast.cost(state, flops, bytes);
}

/* clang-format off */
const d5_op_desc d5__op_ref_CastLike = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64 | D5_OP_HAS_BACKWARD, .name = "CastLike",
    .backend = "ref", .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = castlike_create, .forward = castlike_forward, .backward = castlike_backward,
    .destroy = castlike_destroy, .cost = castlike_cost};
/* clang-format on */
