/* Size (ONNX opset 13; opset 19 only adds data types): the number of elements
 * of the input as an int64 scalar.
 *
 * Like Shape, this operator does not go through the double-precision wrapper
 * of ref.c: it reads only the input's descriptor, never its elements, so it
 * takes a tensor of any data type (float16 too) and writes its int64 output
 * exactly.
 * https://onnx.ai/onnx/operators/onnx__Size.html */
#include "util.h"

#include <string.h>

static d5_status size_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Size: input 0 is required");
    int64_t *n = d5_alloc(sizeof *n, "Size");
    if (!n) return D5_ERR_NOMEM;
    *n = d5_tensor_desc_numel(&in[0].desc);
    for (int32_t i = 0; i < nout; i++) memset(&out[i], 0, sizeof out[i]);
    out[0].dtype = D5_I64;
    out[0].ndim = 0;
    *state = n;
    return D5_OK;
}

static d5_status size_forward(void *state, const d5_op_call *call)
{
    d5_tensor *out = call->outputs;
    *(int64_t *)out[0].data = *(const int64_t *)state;
    return D5_OK;
}

static void size_destroy(void *state)
{
    d5_free(state);
}

static void size_cost(void *state, double *flops, double *bytes)
{
    (void)state;
    *flops = 0;
    *bytes = (double)sizeof(int64_t);
}

/* clang-format off */
const d5_op_desc d5__op_ref_Size = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "Size", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = size_create,
    .forward = size_forward, .destroy = size_destroy, .cost = size_cost};
/* clang-format on */
