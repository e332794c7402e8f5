/* Shape (ONNX opset 15): the dimensions of the input as a 1-d int64 tensor,
 * optionally only dims[start:end] (attributes start, default 0, and end,
 * default the rank; negative values count from the back, then both are
 * clamped to [0, rank]). Opsets before 15 have no start and end: their
 * defaults give the whole shape.
 *
 * Unlike the other reference operators this one does not go through the
 * double-precision wrapper of ref.c: it never reads the input's elements, only
 * its descriptor, so it takes a tensor of any data type (float16 too) and
 * writes its int64 output exactly.
 * https://onnx.ai/onnx/operators/onnx__Shape.html */
#include "util.h"

#include <string.h>

typedef struct shape_state {
    int64_t n;
    int64_t dims[D5_MAX_DIMS];
} shape_state;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static d5_status shape_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Shape: input 0 is required");
    const d5_tensor_desc *x = &in[0].desc;
    int64_t start, end;
    d5_status s = d5_attrs_int(attrs, "start", 0, &start);
    if (s == D5_OK) s = d5_attrs_int(attrs, "end", x->ndim, &end);
    if (s != D5_OK) return s;
    if (start < 0) start += x->ndim;
    if (end < 0) end += x->ndim;
    start = clamp(start, 0, x->ndim);
    end = clamp(end, 0, x->ndim);
    shape_state *st = d5_calloc(1, sizeof *st, "Shape");
    if (!st) return D5_ERR_NOMEM;
    for (int64_t d = start; d < end; d++) st->dims[st->n++] = x->shape[d];
    for (int32_t i = 0; i < nout; i++) memset(&out[i], 0, sizeof out[i]);
    out[0].dtype = D5_I64;
    out[0].ndim = 1;
    out[0].shape[0] = st->n;
    *state = st;
    return D5_OK;
}

static d5_status shape_forward(void *state, const d5_op_call *call)
{
    d5_tensor *out = call->outputs;
    const shape_state *st = state;
    for (int64_t i = 0; i < st->n; i++) ((int64_t *)out[0].data)[i] = st->dims[i];
    return D5_OK;
}

static void shape_destroy(void *state)
{
    d5_free(state);
}

static void shape_cost(void *state, double *flops, double *bytes)
{
    const shape_state *st = state;
    *flops = 0;
    *bytes = (double)st->n * (double)sizeof(int64_t);
}

/* clang-format off */
const d5_op_desc d5__op_ref_Shape = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "Shape", .backend = "ref",
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .create = shape_create,
    .forward = shape_forward, .destroy = shape_destroy, .cost = shape_cost};
/* clang-format on */
