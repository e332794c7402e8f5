/* GroupNormalization (ONNX opsets 18 and 21): X of shape (N, C, D1, ...) is
 * normalised per instance over each of num_groups (attribute, required, a
 * divisor of C) groups of C / num_groups consecutive channels and all their
 * spatial elements:
 *   Y = (X - mean) / sqrt(variance + epsilon) * scale + bias
 * (epsilon default 1e-5). From opset 21 scale and bias hold one value per
 * channel, shape (C); in opset 18 (deprecated by 21) one per group, shape
 * (num_groups). An operator created without "__opset" follows opset 21.
 * stash_type (opset 21, default 1: float32) names the precision of the
 * statistics; this kernel computes in double and accepts 1 (float32), 10
 * (float16), 11 (float64) and 16 (bfloat16). X, scale and bias share one
 * floating-point type, which Y takes with X's shape.
 *
 * Gradient, per group of M elements with xh = (X - mean) * inv and
 * g = dY * scale:
 *   dX = inv * (g - mean(g) - xh * mean(g * xh)),
 *   dscale += dY * xh, dbias += dY (summed into their channel or group).
 * https://onnx.ai/onnx/operators/onnx__GroupNormalization.html */
#include "util.h"

#include <math.h>

typedef struct groupnorm {
    int64_t n, c, groups, spatial; /* X as (n, c, spatial) */
    int per_channel;               /* opset 21: scale and bias per channel */
    double epsilon;
} groupnorm;

static const char *const input_names[3] = {"X", "scale", "bias"};

static d5_status groupnorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    groupnorm g = {0};
    int64_t opset, stash_type;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 3 && s == D5_OK; i++)
        s = d5__need_float("GroupNormalization", in, nin, i);
    for (int32_t i = 1; i < 3 && s == D5_OK; i++)
        s = d5__same_type("GroupNormalization", in, nin, i, 0);
    if (s == D5_OK) s = d5__ref_opset("GroupNormalization", attrs, 21, &opset);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &g.epsilon);
    if (s == D5_OK) s = d5_attrs_int(attrs, "stash_type", 1, &stash_type);
    if (s == D5_OK && !d5_attrs_find(attrs, "num_groups"))
        return d5_error(D5_ERR_INVALID, "GroupNormalization: attribute num_groups is required");
    if (s == D5_OK) s = d5_attrs_int(attrs, "num_groups", 0, &g.groups);
    if (s != D5_OK) return s;
    if (stash_type != 1 && stash_type != 10 && stash_type != 11 && stash_type != 16)
        return d5_error(D5_ERR_INVALID,
                        "GroupNormalization: stash_type is %lld, expected a floating-point type: "
                        "1 (float32), 10 (float16), 11 (float64) or 16 (bfloat16)",
                        (long long)stash_type);
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, "GroupNormalization: X has %d dims, expected (N, C, ...)",
                        (int)x->ndim);
    g.n = x->shape[0];
    g.c = x->shape[1];
    g.spatial = 1;
    for (int32_t d = 2; d < x->ndim; d++) g.spatial *= x->shape[d];
    if (g.groups <= 0 || g.c % g.groups != 0)
        return d5_error(D5_ERR_INVALID,
                        "GroupNormalization: num_groups is %lld, expected a positive divisor of "
                        "the %lld channels",
                        (long long)g.groups, (long long)g.c);
    g.per_channel = opset >= 21;
    int64_t want = g.per_channel ? g.c : g.groups;
    for (int32_t i = 1; i < 3; i++) {
        const d5_tensor_desc *p = &in[i].desc;
        if (p->ndim != 1 || p->shape[0] != want) {
            char got[96];
            d5__shape_str(p, got, sizeof got);
            return d5_error(D5_ERR_SHAPE,
                            "GroupNormalization: %s has shape %s, expected [%lld] (one value per "
                            "%s in opset %lld)",
                            input_names[i], got, (long long)want,
                            g.per_channel ? "channel" : "group", (long long)opset);
        }
    }
    args->outputs[0] = *x;
    return d5__ref_state(state, &g, sizeof g, "GroupNormalization");
}

/* The group of (instance, group) index b: M elements from X's start at b * M;
 * the index into scale and bias of its element j. */
static int64_t param_index(const groupnorm *g, int64_t b, int64_t j)
{
    int64_t group = b % g->groups;
    return g->per_channel ? group * (g->c / g->groups) + j / g->spatial : group;
}

/* Mean and 1 / sqrt(variance + epsilon) of the m elements at x. */
static void statistics(const groupnorm *g, const double *x, int64_t m, double *mean, double *inv)
{
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < m; j++) sum += x[j];
    *mean = m ? sum / (double)m : 0;
    for (int64_t j = 0; j < m; j++) sq += (x[j] - *mean) * (x[j] - *mean);
    *inv = 1 / sqrt((m ? sq / (double)m : 0) + g->epsilon);
}

static d5_status groupnorm_forward(void *state, const d5_ref_call *call)
{
    const groupnorm *g = state;
    const double *scale = call->inputs[1].data, *bias = call->inputs[2].data;
    int64_t m = g->c / g->groups * g->spatial;
    for (int64_t b = 0; b < g->n * g->groups; b++) {
        const double *x = call->inputs[0].data + b * m;
        double *y = call->outputs[0].data + b * m, mean, inv;
        statistics(g, x, m, &mean, &inv);
        for (int64_t j = 0; j < m; j++) {
            int64_t p = param_index(g, b, j);
            y[j] = (x[j] - mean) * inv * scale[p] + bias[p];
        }
    }
    return D5_OK;
}

static d5_status groupnorm_backward(void *state, const d5_ref_call *call)
{
    const groupnorm *g = state;
    const double *scale = call->inputs[1].data;
    d5_rt *gin = call->grad_inputs;
    int64_t m = g->c / g->groups * g->spatial;
    for (int64_t b = 0; b < g->n * g->groups; b++) {
        const double *x = call->inputs[0].data + b * m, *dy = call->grad_outputs[0].data + b * m;
        double mean, inv, sum_g = 0, sum_gxh = 0;
        statistics(g, x, m, &mean, &inv);
        for (int64_t j = 0; j < m; j++) {
            int64_t p = param_index(g, b, j);
            double xh = (x[j] - mean) * inv, gj = dy[j] * scale[p];
            sum_g += gj;
            sum_gxh += gj * xh;
            if (gin[1].data) gin[1].data[p] += dy[j] * xh;
            if (gin[2].data) gin[2].data[p] += dy[j];
        }
        if (!gin[0].data) continue;
        double *dx = gin[0].data + b * m;
        for (int64_t j = 0; j < m; j++) {
            double xh = (x[j] - mean) * inv, gj = dy[j] * scale[param_index(g, b, j)];
            dx[j] += inv * (gj - sum_g / (double)m - xh * sum_gxh / (double)m);
        }
    }
    return D5_OK;
}

/* Mean, centred squares, normalising, scaling and shifting: about 8 operations
 * per element. */
static double groupnorm_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)state;
    return 8.0 * (double)d5_tensor_desc_numel(&shapes->inputs[0]);
}

D5_REF_OPERATOR(GroupNormalization, 3, 3, 1, 1, groupnorm_create, groupnorm_forward,
                groupnorm_backward, NULL, groupnorm_flops);
