/* ArrayFeatureExtractor (ONNX-ML, domain ai.onnx.ml, opset 1): picks elements
 * of X along its last axis. Y (int64, any shape) lists the positions, read
 * flat; Z has X's shape with the last dimension replaced by Y's number of
 * elements: Z[..., j] = X[..., Y[j]]. A 1-d X gives a 2-d [1, n] Z, as ONNX's
 * reference and ONNX Runtime do. X is float32, float64, int64, int32 or
 * string (copied bytes for bytes: int64 exact, strings into the operator's
 * own storage until its next forward call). A position outside [0, X's last
 * dimension) is refused (at create when Y is known then, else at forward).
 * No gradient.
 * https://onnx.ai/onnx/operators/onnx_aionnxml_ArrayFeatureExtractor.html */
#include "util.h"

#include <string.h>

typedef struct extractor {
    int32_t dtype;
    int64_t rows, last, k; /* X is [rows, last]; Z is [rows, k] */
    d5_strpool pool;
} extractor;

static void extractor_destroy(void *state)
{
    extractor *e = state;
    if (e) d5_strpool_clear(&e->pool);
    d5_free(e);
}

/* D5_ERR_RANGE naming the position when one of Y's values is outside [0, last). */
static d5_status check_positions(const int64_t *y, int64_t k, int64_t last)
{
    for (int64_t j = 0; j < k; j++)
        if (y[j] < 0 || y[j] >= last)
            return d5_error(D5_ERR_RANGE,
                            "ArrayFeatureExtractor: input Y's element %lld is %lld, outside [0, "
                            "%lld) (X's last dimension)",
                            (long long)j, (long long)y[j], (long long)last);
    return D5_OK;
}

static d5_status extractor_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_dtypes types = D5__DT(D5_F32) | D5__DT(D5_F64) | D5__DT(D5_I64) | D5__DT(D5_I32);
    d5_status s = D5_OK;
    if (!d5__has_input(in, args->ninputs, 0) || in[0].desc.dtype != D5_STRING)
        s = d5__need_types("ArrayFeatureExtractor", in, args->ninputs, 0, types);
    if (s == D5_OK)
        s = d5__need_types("ArrayFeatureExtractor", in, args->ninputs, 1, D5__DT(D5_I64));
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim == 0)
        return d5_error(D5_ERR_SHAPE,
                        "ArrayFeatureExtractor: input X is a scalar; expected at least 1 dim");
    extractor e = {.dtype = x->dtype,
                   .rows = 1,
                   .last = x->shape[x->ndim - 1],
                   .k = d5_tensor_desc_numel(&in[1].desc)};
    for (int32_t d = 0; d + 1 < x->ndim; d++) e.rows *= x->shape[d];
    if (in[1].data && (s = check_positions(in[1].data, e.k, e.last)) != D5_OK) return s;
    d5_tensor_desc *z = &args->outputs[0];
    *z = *x;
    if (x->ndim == 1) { /* [1, n], as ONNX Runtime */
        z->ndim = 2;
        z->shape[0] = 1;
    }
    z->shape[z->ndim - 1] = e.k;
    extractor *copy = d5_calloc(1, sizeof *copy, "ArrayFeatureExtractor");
    if (!copy) return D5_ERR_NOMEM;
    *copy = e;
    *state = copy;
    return D5_OK;
}

static d5_status extractor_forward(void *state, const d5_op_call *call)
{
    extractor *e = state;
    const int64_t *y = call->inputs[1].data;
    d5_status s = check_positions(y, e->k, e->last);
    if (s != D5_OK) return s;
    if (e->dtype == D5_STRING) {
        d5_strpool_clear(&e->pool);
        const char **z = call->outputs[0].data;
        for (int64_t r = 0; r < e->rows; r++)
            for (int64_t j = 0; j < e->k; j++) {
                const char *w = d5_string_at(&call->inputs[0], r * e->last + y[j]);
                if (!(z[r * e->k + j] = d5_strpool_add(&e->pool, w, strlen(w))))
                    return D5_ERR_NOMEM;
            }
        return D5_OK;
    }
    size_t size = d5_dtype_size((d5_dtype)e->dtype);
    const char *x = call->inputs[0].data;
    char *z = call->outputs[0].data;
    for (int64_t r = 0; r < e->rows; r++)
        for (int64_t j = 0; j < e->k; j++)
            memcpy(z + (size_t)(r * e->k + j) * size, x + (size_t)(r * e->last + y[j]) * size,
                   size);
    return D5_OK;
}

static void extractor_cost(void *state, double *flops, double *bytes)
{
    const extractor *e = state;
    *flops = 0;
    *bytes = (double)e->k * sizeof(int64_t) +
             2.0 * (double)(e->rows * e->k) * (double)d5_dtype_size((d5_dtype)e->dtype);
}

/* clang-format off */
const d5_op_desc d5__op_ref_ArrayFeatureExtractor = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "ArrayFeatureExtractor",
    .backend = "ref",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = extractor_create, .forward = extractor_forward, .destroy = extractor_destroy,
    .cost = extractor_cost};
/* clang-format on */
