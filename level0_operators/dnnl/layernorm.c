/* LayerNormalization (ONNX opset 17) on the dnnl backend, float32, when Scale
 * and B (if given) hold one value per normalised element (shape
 * X.shape[axis:], or any shape of that many elements); others broadcast and
 * run on ref. X is seen as rows of m = prod(X.shape[axis:]) elements. Each
 * row: its mean, then the sum of squared deviations (two passes, as ref, in
 * float32 with vectorised sums), InvStdDev = 1 / sqrt(var + epsilon), and
 * Y = (X - Mean) * InvStdDev * Scale + B in one more pass; the optional
 * outputs Mean and InvStdDev are written when asked for. Rows are split among
 * the threads.
 *
 * Backward (from dY, and dMean, dInvStdDev when given): per row, with
 * xh = (X - Mean) * InvStdDev and g = dY * Scale,
 *   dX = InvStdDev * (g - mean(g) - xh * mean(g * xh))
 *        + dMean / m - dInvStdDev * InvStdDev^2 * xh / m,
 * rows split among the threads; dScale = sum over rows of dY * xh and
 * dB = sum of dY, columns split among the threads.
 * https://onnx.ai/onnx/operators/onnx__LayerNormalization.html */
#include "kernels.h"

#include <math.h>

extern const d5_op_desc d5__op_ref_LayerNormalization;

typedef struct dlayernorm {
    int64_t rows, m;
    float epsilon;
    int has_bias;
} dlayernorm;

/* The mean and 1 / sqrt(variance + epsilon) of one row. */
static D5_CLONES void row_stats(const float *restrict x, int64_t m, float epsilon, float *mean,
                                float *inv)
{
    float sum = 0, sq = 0;
    D5_SIMD_SUM(sum)
    for (int64_t j = 0; j < m; j++) sum += x[j];
    float mu = sum / (float)m;
    D5_SIMD_SUM(sq)
    for (int64_t j = 0; j < m; j++) sq += (x[j] - mu) * (x[j] - mu);
    *mean = mu;
    *inv = 1.0f / sqrtf(sq / (float)m + epsilon);
}

static D5_CLONES void row_forward(const float *restrict x, float *restrict y,
                                  const float *restrict scale, const float *restrict bias,
                                  int64_t m, float mean, float inv)
{
    if (bias) {
        D5_SIMD
        for (int64_t j = 0; j < m; j++) y[j] = (x[j] - mean) * inv * scale[j] + bias[j];
    } else {
        D5_SIMD
        for (int64_t j = 0; j < m; j++) y[j] = (x[j] - mean) * inv * scale[j];
    }
}

static D5_CLONES void row_backward(const float *restrict x, const float *restrict dy,
                                   const float *restrict scale, float *restrict dx, int64_t m,
                                   float mean, float inv, float dmean, float dinv)
{
    float sg = 0, sgx = 0;
    D5_SIMD_SUM(sg)
    for (int64_t j = 0; j < m; j++) sg += dy[j] * scale[j];
    D5_SIMD_SUM(sgx)
    for (int64_t j = 0; j < m; j++) sgx += dy[j] * scale[j] * (x[j] - mean) * inv;
    float fm = (float)m, a = sg / fm, b = sgx / fm, c = dmean / fm, e = dinv * inv * inv / fm;
    D5_SIMD
    for (int64_t j = 0; j < m; j++) {
        float xh = (x[j] - mean) * inv;
        dx[j] = inv * (dy[j] * scale[j] - a - xh * b) + c - e * xh;
    }
}

static d5_status layernorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    const char *name = "LayerNormalization";
    int has_bias = nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID;
    d5_status s = d5__dnnl_f32_shapes(&d5__op_ref_LayerNormalization, name, args);
    if (s != D5_OK) return s;
    int64_t axis;
    double epsilon;
    int32_t ndim = in[0].desc.ndim;
    s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &epsilon);
    if (s != D5_OK) return s;
    if (axis < 0) axis += ndim;
    int64_t rows = 1, m = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (d < axis)
            rows *= in[0].desc.shape[d];
        else
            m *= in[0].desc.shape[d];
    }
    if (d5_tensor_desc_numel(&in[1].desc) != m ||
        (has_bias && d5_tensor_desc_numel(&in[2].desc) != m))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): Scale and B must hold all %lld normalised elements; "
                        "broadcasting ones are the ref backend's",
                        name, (long long)m);
    if (m == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): empty rows are the ref backend's", name);
    dlayernorm *l = d5_calloc(1, sizeof *l, name);
    if (!l) return D5_ERR_NOMEM;
    *l = (dlayernorm){rows, m, (float)epsilon, has_bias};
    *state = l;
    return D5_OK;
}

static d5_status layernorm_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    int32_t nout = call->noutputs;
    const dlayernorm *l = state;
    const float *x = in[0].data, *scale = in[1].data, *bias = l->has_bias ? in[2].data : NULL;
    float *y = out[0].data, *mean_out = nout > 1 ? out[1].data : NULL;
    float *inv_out = nout > 2 ? out[2].data : NULL;
    int parallel = (double)l->rows * (double)l->m * 4 >= D5_PARALLEL_BYTES / 4 && l->rows > 1;
    D5_PARALLEL_RANGE(l->rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++) {
            float mean, inv;
            row_stats(x + r * l->m, l->m, l->epsilon, &mean, &inv);
            row_forward(x + r * l->m, y + r * l->m, scale, bias, l->m, mean, inv);
            if (mean_out) mean_out[r] = mean;
            if (inv_out) inv_out[r] = inv;
        }
    })
    return D5_OK;
}

static d5_status layernorm_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    const dlayernorm *l = state;
    const float *x = in[0].data, *scale = in[1].data, *dy = gout[0].data;
    const float *dmean = nout > 1 ? gout[1].data : NULL, *dinv = nout > 2 ? gout[2].data : NULL;
    float *dx = gin[0].data, *dscale = gin[1].data, *db = l->has_bias ? gin[2].data : NULL;
    int64_t rows = l->rows, m = l->m;
    float *stats = d5_alloc((size_t)(2 * rows) * sizeof *stats, "LayerNormalization gradient");
    float *zeros = dy ? NULL : d5_calloc((size_t)(rows * m), sizeof *zeros, "LayerNormalization");
    if (!stats || (!dy && !zeros)) {
        d5_free(stats);
        d5_free(zeros);
        return D5_ERR_NOMEM;
    }
    if (!dy) dy = zeros;
    int parallel = (double)rows * (double)m * 4 >= D5_PARALLEL_BYTES / 4 && rows > 1;
    D5_PARALLEL_RANGE(rows, parallel, lo, hi, {
        for (int64_t r = lo; r < hi; r++) {
            float mean, inv;
            row_stats(x + r * m, m, l->epsilon, &mean, &inv);
            stats[2 * r] = mean;
            stats[2 * r + 1] = inv;
            if (dx)
                row_backward(x + r * m, dy + r * m, scale, dx + r * m, m, mean, inv,
                             dmean ? dmean[r] : 0.0f, dinv ? dinv[r] : 0.0f);
        }
    })
    if (dscale || db) {
        D5_PARALLEL_RANGE(m, parallel, lo, hi, {
            for (int64_t j = lo; j < hi; j++) {
                if (dscale) dscale[j] = 0;
                if (db) db[j] = 0;
            }
            for (int64_t r = 0; r < rows; r++) {
                const float *xr = x + r * m, *dyr = dy + r * m;
                float mean = stats[2 * r], inv = stats[2 * r + 1];
                if (dscale)
                    for (int64_t j = lo; j < hi; j++) dscale[j] += dyr[j] * (xr[j] - mean) * inv;
                if (db)
                    for (int64_t j = lo; j < hi; j++) db[j] += dyr[j];
            }
        })
    }
    d5_free(stats);
    d5_free(zeros);
    return D5_OK;
}

static void layernorm_destroy(void *state)
{
    d5_free(state);
}

static void layernorm_cost(void *state, double *flops, double *bytes)
{
    const dlayernorm *l = state;
    double n = (double)l->rows * (double)l->m;
    *flops = 8 * n;
    *bytes = 8 * n + 8 * (double)l->m;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_LayerNormalization = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "LayerNormalization",
    .backend = "dnnl", .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 3,
    .create = layernorm_create, .forward = layernorm_forward, .backward = layernorm_backward,
    .destroy = layernorm_destroy, .cost = layernorm_cost};
/* clang-format on */
