/* LayerNormalization (ONNX opset 17): X is normalised over its trailing axes
 * axis .. rank-1 (attribute axis, default -1, negative counting from the
 * back). With the statistics of each of the prod(X.shape[:axis]) rows of
 * M = prod(X.shape[axis:]) elements,
 *   Mean = sum(X) / M,  InvStdDev = 1 / sqrt(sum((X - Mean)^2) / M + epsilon),
 *   Y = (X - Mean) * InvStdDev * Scale + B,
 * where Scale and the optional B broadcast unidirectionally to
 * X.shape[axis:]. The optional outputs Mean and InvStdDev have the shape
 * X.shape[:axis] + [1] * (rank - axis). epsilon defaults to 1e-5. stash_type
 * chooses the precision of the statistics; this kernel computes everything in
 * double. X, Scale and B share one floating-point type. Mean and InvStdDev
 * get X's type when it is float32 or float64, and the stash type (1: float32,
 * the default, or 16: bfloat16) when it is float16 or bfloat16, as ONNX
 * Runtime gives them. The gradient covers X, Scale and B, and flows from all
 * three outputs.
 * https://onnx.ai/onnx/operators/onnx__LayerNormalization.html */
#include "util.h"

#include <math.h>

typedef struct layernorm {
    int64_t rows, m;            /* X seen as rows x m */
    d5_tensor_desc norm;        /* X.shape[axis:] */
    d5_tensor_desc scale, bias; /* as given; bias.dtype invalid when omitted */
    double epsilon;
} layernorm;

static const char *const input_names[3] = {"X", "Scale", "B"};

/* Checks that input i (Scale or B) has X's dtype and broadcasts to `norm`
 * unidirectionally: no more dims, each trailing dim equal or 1. */
static d5_status check_param(const d5_tensor *in, int32_t i, const d5_tensor_desc *norm,
                             int64_t axis)
{
    const d5_tensor_desc *p = &in[i].desc;
    if (p->dtype != in[0].desc.dtype)
        return d5_error(D5_ERR_INVALID, "LayerNormalization: %s has data type %s, X %s",
                        input_names[i], d5_dtype_name((d5_dtype)p->dtype),
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    int ok = p->ndim <= norm->ndim;
    for (int32_t d = 0; ok && d < p->ndim; d++) {
        int64_t want = norm->shape[norm->ndim - p->ndim + d];
        ok = p->shape[d] == want || p->shape[d] == 1;
    }
    if (!ok) {
        char got[96], want[96];
        d5__shape_str(p, got, sizeof got);
        d5__shape_str(norm, want, sizeof want);
        return d5_error(D5_ERR_SHAPE,
                        "LayerNormalization: %s has shape %s, which does not broadcast to %s "
                        "(X.shape[%lld:])",
                        input_names[i], got, want, (long long)axis);
    }
    return D5_OK;
}

static d5_status layernorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    layernorm l = {0};
    int64_t axis, stash_type;
    int32_t ax = 0;
    d5_status s = d5__need_float("LayerNormalization", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("LayerNormalization", in, nin, 1);
    if (s == D5_OK && d5__has_input(in, nin, 2))
        s = d5__need_float("LayerNormalization", in, nin, 2);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &l.epsilon);
    if (s == D5_OK) s = d5_attrs_int(attrs, "stash_type", 1, &stash_type);
    if (s == D5_OK) s = d5__axis("LayerNormalization", axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    int32_t stats = in[0].desc.dtype; /* the type of Mean and InvStdDev */
    if (stats == D5_F16 || stats == D5_BF16) {
        if (stash_type != 1 && stash_type != 16)
            return d5_error(D5_ERR_INVALID,
                            "LayerNormalization: stash_type is %lld, expected 1 (float32) or 16 "
                            "(bfloat16)",
                            (long long)stash_type);
        stats = stash_type == 1 ? D5_F32 : D5_BF16;
    }
    const d5_tensor_desc *x = &in[0].desc;
    l.norm = *x;
    l.norm.ndim = x->ndim - ax;
    l.rows = 1;
    l.m = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d < ax)
            l.rows *= x->shape[d];
        else
            l.m *= x->shape[d];
        if (d >= ax) l.norm.shape[d - ax] = x->shape[d];
    }
    s = check_param(in, 1, &l.norm, axis);
    if (s == D5_OK && d5__has_input(in, nin, 2)) s = check_param(in, 2, &l.norm, axis);
    if (s != D5_OK) return s;
    l.scale = in[1].desc;
    if (d5__has_input(in, nin, 2)) l.bias = in[2].desc;
    out[0] = *x;
    for (int32_t k = 1; k < nout; k++) {
        out[k] = *x;
        out[k].dtype = stats;
        for (int32_t d = ax; d < x->ndim; d++) out[k].shape[d] = 1;
    }
    return d5__ref_state(state, &l, sizeof l, "LayerNormalization");
}

/* Mean and 1 / sqrt(variance + epsilon) of the row of m elements at x. */
static void statistics(const layernorm *l, const double *x, double *mean, double *inv)
{
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < l->m; j++) sum += x[j];
    *mean = sum / (double)l->m;
    for (int64_t j = 0; j < l->m; j++) sq += (x[j] - *mean) * (x[j] - *mean);
    *inv = 1 / sqrt(sq / (double)l->m + l->epsilon);
}

static d5_status layernorm_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    const layernorm *l = state;
    const double *scale = in[1].data, *bias = l->bias.dtype != D5_DTYPE_INVALID ? in[2].data : NULL;
    for (int64_t r = 0; r < l->rows; r++) {
        const double *x = in[0].data + r * l->m;
        double *y = out[0].data + r * l->m, mean, inv;
        statistics(l, x, &mean, &inv);
        for (int64_t j = 0; j < l->m; j++) {
            double v = (x[j] - mean) * inv * scale[d5__broadcast_index(&l->norm, &l->scale, j)];
            if (bias) v += bias[d5__broadcast_index(&l->norm, &l->bias, j)];
            y[j] = v;
        }
        if (nout > 1) out[1].data[r] = mean;
        if (nout > 2) out[2].data[r] = inv;
    }
    return D5_OK;
}

/* With xh = (x - Mean) * InvStdDev and g = dY * Scale, per row of M elements:
 * dB = sum dY, dScale = sum dY * xh (both summed over the rows and the
 * broadcast axes), and
 *   dX = InvStdDev * (g - mean(g) - xh * mean(g * xh))
 *        + dMean / M - dInvStdDev * InvStdDev^2 * xh / M. */
static d5_status layernorm_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const layernorm *l = state;
    const double *scale = in[1].data;
    double m = (double)l->m;
    for (int64_t r = 0; r < l->rows; r++) {
        const double *x = in[0].data + r * l->m, *dy = gout[0].data + r * l->m;
        double mean, inv, sum_g = 0, sum_gxh = 0;
        statistics(l, x, &mean, &inv);
        for (int64_t j = 0; j < l->m; j++) {
            int64_t si = d5__broadcast_index(&l->norm, &l->scale, j);
            double xh = (x[j] - mean) * inv, g = dy[j] * scale[si];
            sum_g += g;
            sum_gxh += g * xh;
            if (gin[1].data) gin[1].data[si] += dy[j] * xh;
            if (l->bias.dtype != D5_DTYPE_INVALID && gin[2].data)
                gin[2].data[d5__broadcast_index(&l->norm, &l->bias, j)] += dy[j];
        }
        if (!gin[0].data) continue;
        double dmean = nout > 1 ? gout[1].data[r] : 0, dinv = nout > 2 ? gout[2].data[r] : 0;
        double *dx = gin[0].data + r * l->m;
        for (int64_t j = 0; j < l->m; j++) {
            double xh = (x[j] - mean) * inv,
                   g = dy[j] * scale[d5__broadcast_index(&l->norm, &l->scale, j)];
            dx[j] +=
                inv * (g - sum_g / m - xh * sum_gxh / m) + dmean / m - dinv * inv * inv * xh / m;
        }
    }
    return D5_OK;
}

/* Mean, centred squares, normalising, scaling and shifting: about 8 operations
 * per element. */
static double layernorm_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return 8.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(LayerNormalization, 2, 3, 1, 3, layernorm_create, layernorm_forward,
                layernorm_backward, NULL, layernorm_flops);
