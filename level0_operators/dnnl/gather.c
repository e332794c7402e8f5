/* Gather (ONNX opset 13) on the dnnl backend, any data type, int32 or int64
 * indices: an embedding lookup when axis is 0. Seen as data [outer, n, inner]
 * and indices of count elements, output row (o, j) is the block
 * data[o, indices[j], :] of inner elements, copied with memcpy; the rows are
 * split among the threads. Indices are checked first (one outside [-n, n - 1]
 * is D5_ERR_RANGE, as on ref). Backward (float32 data): dData is zero except
 * where an index points, where the rows of dY are added in index order.
 * https://onnx.ai/onnx/operators/onnx__Gather.html */
#include "kernels.h"

#include "ref/util.h"

extern const d5_op_desc d5__op_ref_Gather;

typedef struct dgather {
    int64_t outer, n, inner, count; /* inner in elements */
    size_t esize;
    int i64; /* int64 indices, else int32 */
    int32_t axis;
} dgather;

static d5_status gather_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_Gather, args);
    int64_t axis;
    int32_t ax;
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__axis("Gather", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    dgather *g = d5_calloc(1, sizeof *g, "Gather");
    if (!g) return D5_ERR_NOMEM;
    *g = (dgather){1,
                   x->shape[ax],
                   1,
                   d5_tensor_desc_numel(&in[1].desc),
                   d5_dtype_size((d5_dtype)x->dtype),
                   in[1].desc.dtype == D5_I64,
                   ax};
    for (int32_t d = 0; d < ax; d++) g->outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) g->inner *= x->shape[d];
    *state = g;
    return D5_OK;
}

static int64_t index_at(const dgather *g, const void *ind, int64_t j)
{
    int64_t v = g->i64 ? ((const int64_t *)ind)[j] : ((const int32_t *)ind)[j];
    return v < 0 ? v + g->n : v;
}

static d5_status check_indices(const dgather *g, const void *ind)
{
    for (int64_t j = 0; j < g->count; j++) {
        int64_t v = index_at(g, ind, j);
        if (v < 0 || v >= g->n)
            return d5_error(D5_ERR_RANGE,
                            "Gather: indices[%lld] is %lld, outside [%lld, %lld] for axis %d of "
                            "size %lld",
                            (long long)j, (long long)(v >= g->n ? v : v - g->n), (long long)-g->n,
                            (long long)g->n - 1, (int)g->axis, (long long)g->n);
    }
    return D5_OK;
}

static d5_status gather_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const dgather *g = state;
    d5_status s = check_indices(g, in[1].data);
    if (s != D5_OK) return s;
    const char *x = in[0].data;
    char *y = out[0].data;
    size_t row = (size_t)g->inner * g->esize;
    int64_t rows = g->outer * g->count;
    int parallel = (double)rows * (double)row >= D5_PARALLEL_BYTES;
    D5_PARALLEL_RANGE(rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++) {
            int64_t o = r / g->count, j = r % g->count;
            memcpy(y + (size_t)r * row, x + (size_t)(o * g->n + index_at(g, in[1].data, j)) * row,
                   row);
        }
    })
    return D5_OK;
}

static d5_status gather_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    const dgather *g = state;
    if (!gin[0].data) return D5_OK;
    if (g->esize != sizeof(float) || in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "Gather (dnnl): gradients of float32 data only");
    float *dx = gin[0].data;
    memset(dx, 0, (size_t)(g->outer * g->n * g->inner) * sizeof *dx);
    if (!gout[0].data) return D5_OK;
    d5_status s = check_indices(g, in[1].data);
    if (s != D5_OK) return s;
    const float *dy = gout[0].data;
    for (int64_t o = 0; o < g->outer; o++)
        for (int64_t j = 0; j < g->count; j++) {
            float *d = dx + (o * g->n + index_at(g, in[1].data, j)) * g->inner;
            const float *src = dy + (o * g->count + j) * g->inner;
            for (int64_t k = 0; k < g->inner; k++) d[k] += src[k];
        }
    return D5_OK;
}

static void gather_destroy(void *state)
{
    d5_free(state);
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Gather = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Gather",
    .backend = "dnnl", .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = gather_create, .forward = gather_forward, .backward = gather_backward,
    .destroy = gather_destroy};
/* clang-format on */
