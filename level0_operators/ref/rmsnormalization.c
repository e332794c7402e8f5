/* RMSNormalization (ONNX opset 23): X is normalised over its trailing axes
 * axis .. rank-1 (attribute axis, default -1, negative counting from the
 * back). With the root mean square of each of the prod(X.shape[:axis]) rows
 * of M = prod(X.shape[axis:]) elements,
 *   R = 1 / sqrt(sum(X^2) / M + epsilon),   Y = X * R * Scale,
 * where Scale broadcasts unidirectionally to X (as it does to
 * X.shape[axis:]). epsilon defaults to 1e-5. stash_type (default 1, float32)
 * names the precision of the statistics; this kernel computes everything in
 * double, and accepts the floating-point types 1 (float32), 10 (float16), 11
 * (float64) and 16 (bfloat16). X and Scale are floating point; Y takes
 * Scale's type (V of the schema) and X's shape. The gradient covers X and
 * Scale.
 * https://onnx.ai/onnx/operators/onnx__RMSNormalization.html */
#include "util.h"

#include <math.h>

typedef struct rmsnorm {
    int64_t rows, m; /* X seen as rows x m */
    d5_tensor_desc x, scale;
    double epsilon;
} rmsnorm;

static d5_status rmsnorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    rmsnorm r = {0};
    int64_t axis, stash_type;
    int32_t ax = 0;
    d5_status s = d5__need_float("RMSNormalization", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("RMSNormalization", in, nin, 1);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &r.epsilon);
    if (s == D5_OK) s = d5_attrs_int(attrs, "stash_type", 1, &stash_type);
    if (s == D5_OK) s = d5__axis("RMSNormalization", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    if (stash_type != 1 && stash_type != 10 && stash_type != 11 && stash_type != 16)
        return d5_error(D5_ERR_INVALID,
                        "RMSNormalization: stash_type is %lld, expected a floating-point type: 1 "
                        "(float32), 10 (float16), 11 (float64) or 16 (bfloat16)",
                        (long long)stash_type);
    r.x = in[0].desc;
    r.scale = in[1].desc;
    int ok = r.scale.ndim <= r.x.ndim;
    for (int32_t d = 0; ok && d < r.scale.ndim; d++) {
        int64_t want = r.x.shape[r.x.ndim - r.scale.ndim + d];
        ok = r.scale.shape[d] == want || r.scale.shape[d] == 1;
    }
    if (!ok) {
        char got[96], want[96];
        d5__shape_str(&r.scale, got, sizeof got);
        d5__shape_str(&r.x, want, sizeof want);
        return d5_error(D5_ERR_SHAPE,
                        "RMSNormalization: scale has shape %s, which does not broadcast to X's %s",
                        got, want);
    }
    r.rows = 1;
    r.m = 1;
    for (int32_t d = 0; d < r.x.ndim; d++) {
        if (d < ax)
            r.rows *= r.x.shape[d];
        else
            r.m *= r.x.shape[d];
    }
    args->outputs[0] = r.x;
    args->outputs[0].dtype = r.scale.dtype;
    return d5__ref_state(state, &r, sizeof r, "RMSNormalization");
}

/* 1 / sqrt(mean(x^2) + epsilon) of the row of m elements at x. */
static double inv_rms(const rmsnorm *r, const double *x)
{
    double sq = 0;
    for (int64_t j = 0; j < r->m; j++) sq += x[j] * x[j];
    return 1 / sqrt(sq / (double)r->m + r->epsilon);
}

static d5_status rmsnorm_forward(void *state, const d5_ref_call *call)
{
    const rmsnorm *r = state;
    const double *scale = call->inputs[1].data;
    d5_rt *out = call->outputs;
    for (int64_t row = 0; row < r->rows; row++) {
        const double *x = call->inputs[0].data + row * r->m;
        double inv = inv_rms(r, x);
        for (int64_t j = 0; j < r->m; j++) {
            int64_t i = row * r->m + j;
            out[0].data[i] = x[j] * inv * scale[d5__broadcast_index(&r->x, &r->scale, i)];
        }
    }
    return D5_OK;
}

/* Per row, with R as above and g = dY * Scale:
 *   dX = R * g - R^3 * X * sum(g * X) / M,   dScale += dY * X * R. */
static d5_status rmsnorm_backward(void *state, const d5_ref_call *call)
{
    const rmsnorm *r = state;
    const double *scale = call->inputs[1].data;
    d5_rt *gin = call->grad_inputs;
    for (int64_t row = 0; row < r->rows; row++) {
        const double *x = call->inputs[0].data + row * r->m;
        const double *dy = call->grad_outputs[0].data + row * r->m;
        double inv = inv_rms(r, x), sum = 0;
        for (int64_t j = 0; j < r->m; j++) {
            int64_t si = d5__broadcast_index(&r->x, &r->scale, row * r->m + j);
            sum += dy[j] * scale[si] * x[j];
            if (gin[1].data) gin[1].data[si] += dy[j] * x[j] * inv;
        }
        if (!gin[0].data) continue;
        double *dx = gin[0].data + row * r->m, k = inv * inv * inv * sum / (double)r->m;
        for (int64_t j = 0; j < r->m; j++) {
            double g = dy[j] * scale[d5__broadcast_index(&r->x, &r->scale, row * r->m + j)];
            dx[j] += inv * g - k * x[j];
        }
    }
    return D5_OK;
}

/* Squares, normalising and scaling: about 4 operations per element. */
static double rmsnorm_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)state;
    return 4.0 * (double)d5_tensor_desc_numel(&shapes->inputs[0]);
}

D5_REF_OPERATOR(RMSNormalization, 2, 2, 1, 1, rmsnorm_create, rmsnorm_forward, rmsnorm_backward,
                NULL, rmsnorm_flops);
