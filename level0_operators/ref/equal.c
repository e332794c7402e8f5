/* Equal (ONNX opsets 11, 13, 19): C = (A == B) element-wise with numpy
 * broadcasting; A and B share one data type, C is bool. No gradient. Numbers
 * and bools are compared as doubles, exact for integers up to 2^53; strings
 * (opset 19) byte for byte.
 * https://onnx.ai/onnx/operators/onnx__Equal.html */
#include "binary.h"

#include <string.h>

static double equal(double a, double b)
{
    return a == b;
}

static const d5_binary_fn equal_fn = {"Equal", equal, NULL, NULL, D5_BINARY_ANY};

/* The numbers' operator, which Equal hands numeric inputs to. */
D5_BINARY_OPERATOR_NO_BACKWARD(EqualNumbers, equal_fn);

/* Strings: the state is this marker, the numbers' state anything else. */
static char strings_state;

static d5_status equal_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    if (args->ninputs < 2 || in[0].desc.dtype != D5_STRING || in[1].desc.dtype != D5_STRING) {
        d5_op_create_args named = *args;
        d5_status s = d5__op_ref_EqualNumbers.create(&named, state);
        if (s != D5_OK && strncmp(d5_last_error(), "EqualNumbers", 12) == 0)
            s = d5_error(s, "Equal%s", d5_last_error() + 12);
        return s;
    }
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    d5_status s = d5__broadcast("Equal", both, 2, &args->outputs[0]);
    if (s != D5_OK) return s;
    args->outputs[0].dtype = D5_BOOL;
    *state = &strings_state;
    return D5_OK;
}

static d5_status equal_forward(void *state, const d5_op_call *call)
{
    if (state != &strings_state) return d5__op_ref_EqualNumbers.forward(state, call);
    const d5_tensor *in = call->inputs;
    const d5_tensor_desc *c = &call->outputs[0].desc;
    uint8_t *y = call->outputs[0].data;
    int64_t n = d5_tensor_desc_numel(c);
    for (int64_t i = 0; i < n; i++)
        y[i] = strcmp(d5_string_at(&in[0], d5__broadcast_index(c, &in[0].desc, i)),
                      d5_string_at(&in[1], d5__broadcast_index(c, &in[1].desc, i))) == 0;
    return D5_OK;
}

static void equal_destroy(void *state)
{
    if (state != &strings_state) d5__op_ref_EqualNumbers.destroy(state);
}

static void equal_cost(void *state, double *flops, double *bytes)
{
    if (state != &strings_state) {
        d5__op_ref_EqualNumbers.cost(state, flops, bytes);
        return;
    }
    *flops = 0;
    *bytes = 0;
}

/* clang-format off */
const d5_op_desc d5__op_ref_Equal = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "Equal", .backend = "ref",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = equal_create, .forward = equal_forward, .destroy = equal_destroy,
    .cost = equal_cost};
/* clang-format on */
