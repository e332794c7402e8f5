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

static d5_status size_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
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

static d5_status size_forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                              int32_t nout)
{
    (void)in;
    (void)nin;
    (void)nout;
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

const d5_op_desc d5__op_ref_Size = {
    D5_OP_ABI_VERSION, D5_OP_F64,    "Size", "ref",        1,        1, 1, 1,
    size_create,       size_forward, NULL,   size_destroy, size_cost};
