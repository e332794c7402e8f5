/* Softmax and LogSoftmax (ONNX opsets 1 to 13) on the dnnl backend, float32,
 * along the last axis (axis -1 or rank - 1; before opset 13 the 2-d view
 * [prod(shape[:axis]), prod(shape[axis:])] is the same rows then). Other axes
 * are declined (D5_ERR_UNSUPPORTED) and run on ref. Each row: its maximum,
 * exp(x - max) and their sum, then the quotient (Softmax) or
 * x - max - log(sum) (LogSoftmax); rows are split among the threads, each
 * loop vectorised (kernels.h). Backward: dX = Y (dY - sum(dY Y)) for Softmax,
 * dX = dY - exp(Y) sum(dY) for LogSoftmax.
 * https://onnx.ai/onnx/operators/onnx__Softmax.html
 * https://onnx.ai/onnx/operators/onnx__LogSoftmax.html */
#include "kernels.h"

#include <float.h>
#include <math.h>

extern const d5_op_desc d5__op_ref_Softmax, d5__op_ref_LogSoftmax;

typedef struct dsoftmax {
    int64_t rows, n;
    int log;
} dsoftmax;

static D5_CLONES void softmax_row(const float *restrict x, float *restrict y, int64_t n, int log)
{
    float max = -INFINITY, sum = 0;
    D5_SIMD_MAX(max)
    for (int64_t k = 0; k < n; k++) max = x[k] > max ? x[k] : max;
    if (log) {
        D5_SIMD_SUM(sum)
        for (int64_t k = 0; k < n; k++) sum += d5__expf(x[k] - max);
        float shift = max + logf(sum);
        D5_SIMD
        for (int64_t k = 0; k < n; k++) y[k] = x[k] - shift;
        return;
    }
    D5_SIMD_SUM(sum)
    for (int64_t k = 0; k < n; k++) {
        float e = d5__expf(x[k] - max);
        y[k] = e;
        sum += e;
    }
    /* Probabilities below the smallest normal float are written 0: a
     * denormal would slow the MatMul that reads them (attention's P V) a
     * hundredfold on Intel cores, where a causal mask makes half of them. */
    float inv = 1.0f / sum;
    D5_SIMD
    for (int64_t k = 0; k < n; k++) {
        float v = y[k] * inv;
        y[k] = v < FLT_MIN ? 0.0f : v;
    }
}

static D5_CLONES void softmax_row_backward(const float *restrict y, const float *restrict dy,
                                           float *restrict dx, int64_t n, int log)
{
    float dot = 0;
    if (log) {
        D5_SIMD_SUM(dot)
        for (int64_t k = 0; k < n; k++) dot += dy[k];
        D5_SIMD
        for (int64_t k = 0; k < n; k++) dx[k] = dy[k] - d5__expf(y[k]) * dot;
        return;
    }
    D5_SIMD_SUM(dot)
    for (int64_t k = 0; k < n; k++) dot += dy[k] * y[k];
    D5_SIMD
    for (int64_t k = 0; k < n; k++) dx[k] = y[k] * (dy[k] - dot);
}

static d5_status create(const d5_op_desc *ref, const char *name, const d5_op_create_args *args,
                        void **state)
{
    d5_status s = d5__dnnl_f32_shapes(ref, name, args);
    if (s != D5_OK) return s;
    int64_t opset, axis;
    const d5_tensor_desc *x = &args->inputs[0].desc;
    s = d5_attrs_int(args->attrs, "__opset", 13, &opset);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "axis", opset >= 13 ? -1 : 1, &axis);
    if (s != D5_OK) return s;
    if (axis < 0) axis += x->ndim;
    if (x->ndim < 1 || axis != x->ndim - 1)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): only the last axis, not axis %lld of %d",
                        name, (long long)axis, (int)x->ndim);
    dsoftmax *d = d5_calloc(1, sizeof *d, name);
    if (!d) return D5_ERR_NOMEM;
    d->n = x->shape[x->ndim - 1];
    d->rows = d->n ? d5_tensor_desc_numel(x) / d->n : 0;
    d->log = ref == &d5__op_ref_LogSoftmax;
    *state = d;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const dsoftmax *d = state;
    const float *x = call->inputs[0].data;
    float *y = call->outputs[0].data;
    int parallel = (double)d->rows * (double)d->n * 4 >= D5_PARALLEL_BYTES / 4 && d->rows > 1;
    D5_PARALLEL_RANGE(d->rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++) softmax_row(x + r * d->n, y + r * d->n, d->n, d->log);
    })
    return D5_OK;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const dsoftmax *d = state;
    float *dx = d5__dnnl_grad_begin(call, d->rows * d->n);
    if (!dx) return D5_OK;
    const float *y = call->outputs[0].data, *dy = call->grad_outputs[0].data;
    int parallel = (double)d->rows * (double)d->n * 4 >= D5_PARALLEL_BYTES / 4 && d->rows > 1;
    D5_PARALLEL_RANGE(d->rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++)
            softmax_row_backward(y + r * d->n, dy + r * d->n, dx + r * d->n, d->n, d->log);
    })
    return D5_OK;
}

static void destroy(void *state)
{
    d5_free(state);
}

static void cost(void *state, double *flops, double *bytes)
{
    const dsoftmax *d = state;
    double n = (double)d->rows * (double)d->n;
    *flops = 4 * n;
    *bytes = 8 * n;
}

static d5_status softmax_create(const d5_op_create_args *args, void **state)
{
    return create(&d5__op_ref_Softmax, "Softmax", args, state);
}

static d5_status logsoftmax_create(const d5_op_create_args *args, void **state)
{
    return create(&d5__op_ref_LogSoftmax, "LogSoftmax", args, state);
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_Softmax = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "Softmax",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = softmax_create, .forward = forward, .backward = backward, .destroy = destroy,
    .cost = cost};
/* clang-format on */
/* clang-format off */
const d5_op_desc d5__op_dnnl_LogSoftmax = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "LogSoftmax",
    .backend = "dnnl", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = logsoftmax_create, .forward = forward, .backward = backward, .destroy = destroy,
    .cost = cost};
/* clang-format on */
