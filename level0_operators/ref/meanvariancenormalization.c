/* MeanVarianceNormalization (ONNX opset 13; opset 9 the same without
 * bfloat16): Y = (X - mean) / (std + 1e-9), with the mean and the (biased)
 * standard deviation taken over `axes` (attribute, default [0, 2, 3]: per
 * channel of an N x C x H x W input; negative axes count from the back), as
 * the function body of the spec computes it. The input is floating point.
 * Opset 1's across_channels and normalize_variance are not supported. The
 * gradient is that of the formula, through the mean and the deviation:
 *   dX = (dY - mean(dY)) / d - (X - mean) * mean(dY * (X - mean)) / (std * d^2)
 * with d = std + 1e-9 (the second term vanishes where std is 0).
 * https://onnx.ai/onnx/operators/onnx__MeanVarianceNormalization.html */
#include "util.h"

#include <math.h>
#include <string.h>

#define MVN_EPSILON 1e-9

typedef struct mvn {
    int64_t groups, per_group; /* groups of elements normalized together */
    int32_t ndim;
    int64_t shape[D5_MAX_DIMS];
    int reduced[D5_MAX_DIMS]; /* 1 for the axes reduced */
    double *mean, *std;       /* per group */
} mvn;

static void mvn_destroy(void *state)
{
    mvn *m = state;
    if (!m) return;
    d5_free(m->mean);
    d5_free(m);
}

static d5_status mvn_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_float("MeanVarianceNormalization", in, nin, 0);
    int64_t opset;
    if (s == D5_OK) s = d5__ref_opset("MeanVarianceNormalization", attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    if (opset < 9)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "MeanVarianceNormalization: opset %lld (across_channels, "
                        "normalize_variance) is not supported, only opset 9 and later (axes)",
                        (long long)opset);
    const d5_tensor_desc *x = &in[0].desc;
    static const int64_t default_axes[] = {0, 2, 3};
    const int64_t *axes = NULL;
    int64_t naxes = 0;
    if ((s = d5_attrs_ints(attrs, "axes", &axes, &naxes)) != D5_OK) return s;
    if (!axes) {
        if (x->ndim < 4)
            return d5_error(D5_ERR_SHAPE,
                            "MeanVarianceNormalization: input has %d dims; the default axes [0, "
                            "2, 3] need at least 4 (give axes)",
                            (int)x->ndim);
        axes = default_axes;
        naxes = 3;
    }
    mvn m;
    memset(&m, 0, sizeof m);
    m.ndim = x->ndim;
    for (int64_t k = 0; k < naxes; k++) {
        int32_t a;
        if ((s = d5__axis("MeanVarianceNormalization", axes[k], x->ndim, &a)) != D5_OK) return s;
        if (m.reduced[a])
            return d5_error(D5_ERR_INVALID, "MeanVarianceNormalization: axis %lld is given twice",
                            (long long)axes[k]);
        m.reduced[a] = 1;
    }
    m.groups = m.per_group = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        m.shape[d] = x->shape[d];
        if (m.reduced[d])
            m.per_group *= x->shape[d];
        else
            m.groups *= x->shape[d];
    }
    mvn *st = d5_alloc(sizeof *st, "MeanVarianceNormalization");
    if (!st) return D5_ERR_NOMEM;
    *st = m;
    st->mean = d5_alloc((size_t)(2 * (m.groups ? m.groups : 1)) * sizeof(double),
                        "MeanVarianceNormalization");
    if (!st->mean) {
        d5_free(st);
        return D5_ERR_NOMEM;
    }
    st->std = st->mean + (m.groups ? m.groups : 1);
    *state = st;
    out[0] = *x;
    return D5_OK;
}

/* The group of flat element e: its coordinates along the axes kept. */
static int64_t group_of(const mvn *m, int64_t e)
{
    int64_t g = 0, stride = 1;
    for (int32_t d = m->ndim - 1; d >= 0; d--) {
        int64_t c = e % m->shape[d];
        e /= m->shape[d];
        if (!m->reduced[d]) {
            g += c * stride;
            stride *= m->shape[d];
        }
    }
    return g;
}

/* The per-group mean and standard deviation of x (n elements). */
static void statistics(mvn *m, const double *x, int64_t n)
{
    for (int64_t g = 0; g < m->groups; g++) m->mean[g] = m->std[g] = 0;
    for (int64_t e = 0; e < n; e++) m->mean[group_of(m, e)] += x[e];
    for (int64_t g = 0; g < m->groups; g++) m->mean[g] /= (double)m->per_group;
    for (int64_t e = 0; e < n; e++) {
        int64_t g = group_of(m, e);
        m->std[g] += (x[e] - m->mean[g]) * (x[e] - m->mean[g]);
    }
    for (int64_t g = 0; g < m->groups; g++) m->std[g] = sqrt(m->std[g] / (double)m->per_group);
}

static d5_status mvn_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    mvn *m = state;
    statistics(m, in[0].data, in[0].numel);
    for (int64_t e = 0; e < in[0].numel; e++) {
        int64_t g = group_of(m, e);
        out[0].data[e] = (in[0].data[e] - m->mean[g]) / (m->std[g] + MVN_EPSILON);
    }
    return D5_OK;
}

static d5_status mvn_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    mvn *m = state;
    if (!gin[0].data) return D5_OK;
    const double *x = in[0].data, *gy = gout[0].data;
    int64_t n = in[0].numel;
    statistics(m, x, n);
    /* Per group: the mean of dY and of dY * (X - mean), kept in a scratch
     * block of two values per group. */
    double *sums = d5_calloc((size_t)(2 * (m->groups ? m->groups : 1)), sizeof(double),
                             "MeanVarianceNormalization");
    if (!sums) return D5_ERR_NOMEM;
    for (int64_t e = 0; e < n; e++) {
        int64_t g = group_of(m, e);
        sums[2 * g] += gy[e];
        sums[2 * g + 1] += gy[e] * (x[e] - m->mean[g]);
    }
    for (int64_t e = 0; e < n; e++) {
        int64_t g = group_of(m, e);
        double d = m->std[g] + MVN_EPSILON, c = x[e] - m->mean[g];
        double mean_gy = sums[2 * g] / (double)m->per_group;
        double mean_gyc = sums[2 * g + 1] / (double)m->per_group;
        double grad = (gy[e] - mean_gy) / d;
        if (m->std[g] > 0) grad -= c * mean_gyc / (m->std[g] * d * d);
        gin[0].data[e] += grad;
    }
    d5_free(sums);
    return D5_OK;
}

D5_REF_OPERATOR(MeanVarianceNormalization, 1, 1, 1, 1, mvn_create, mvn_forward, mvn_backward,
                mvn_destroy, NULL);
