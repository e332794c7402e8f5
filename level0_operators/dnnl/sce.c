/* SoftmaxCrossEntropyLoss (ONNX opset 13) on the dnnl backend, in C: float32
 * scores (N, C) or (N, C, D1..Dk), int64 or int32 labels, reduction "mean"
 * or "sum", an optional ignore_index; no weights and no log_prob output
 * (those are declined: D5_ERR_UNSUPPORTED, and ref runs them). A classifier's
 * loss, and a language model's over its vocabulary, whose ref kernel in
 * double precision took most of a training step.
 *
 * Each sample (n) is one work item: its positions p of D = D1..Dk are the
 * inner, contiguous loop, so that a class k of every position is read in one
 * sweep (the class axis has stride D): the maxima, then the sums of exp in
 * double, then each position's loss log(sum) + max - x[label]; a
 * classifier's D = 1 runs along the classes instead. Backward:
 * dscores = g (softmax - onehot(label)) at every position not ignored, 0 at
 * the ignored ones, with g the output's gradient divided, for the mean, by
 * the number of positions not ignored.
 * https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

extern const d5_op_desc d5__op_ref_SoftmaxCrossEntropyLoss;

#define NAME "SoftmaxCrossEntropyLoss"

typedef struct dsce {
    int64_t n, c, d; /* samples, classes, positions per sample */
    int mean;        /* reduction mean; else sum */
    int has_ignore;
    int64_t ignore_index;
    int labels64; /* int64 labels; else int32 */
} dsce;

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    if (in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, NAME " (dnnl): scores are %s; float32 only",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    if (args->ninputs > 2 && in[2].desc.dtype != D5_DTYPE_INVALID)
        return d5_error(D5_ERR_UNSUPPORTED, NAME " (dnnl): weights are the ref backend's");
    if (args->noutputs > 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        NAME " (dnnl): the log_prob output is the ref backend's");
    d5_status s = d5__dnnl_ref_shapes(&d5__op_ref_SoftmaxCrossEntropyLoss, args);
    const char *reduction = "mean";
    if (s == D5_OK) s = d5_attrs_string(args->attrs, "reduction", "mean", &reduction);
    if (s != D5_OK) return s;
    if (strcmp(reduction, "mean") != 0 && strcmp(reduction, "sum") != 0)
        return d5_error(D5_ERR_UNSUPPORTED, NAME " (dnnl): reduction '%s' is the ref backend's",
                        reduction);
    dsce *g = d5_calloc(1, sizeof *g, NAME);
    if (!g) return D5_ERR_NOMEM;
    const d5_tensor_desc *x = &in[0].desc;
    g->n = x->shape[0];
    g->c = x->shape[1];
    g->d = 1;
    for (int32_t i = 2; i < x->ndim; i++) g->d *= x->shape[i];
    g->mean = strcmp(reduction, "mean") == 0;
    g->labels64 = in[1].desc.dtype == D5_I64;
    g->has_ignore = d5_attrs_find(args->attrs, "ignore_index") != NULL;
    if (g->has_ignore) s = d5_attrs_int(args->attrs, "ignore_index", 0, &g->ignore_index);
    if (s != D5_OK) {
        d5_free(g);
        return s;
    }
    *state = g;
    return D5_OK;
}

static int64_t label_at(const dsce *g, const void *labels, int64_t j)
{
    return g->labels64 ? ((const int64_t *)labels)[j] : ((const int32_t *)labels)[j];
}

/* The log-sum-exp of each position of sample x (C x D floats) into lse[D]
 * (sums of exp in double); m[D] receives the maxima. Vectorised along the
 * positions, or along the classes for a classifier's D = 1. */
static D5_CLONES void sample_lse(const dsce *g, const float *restrict x, float *restrict m,
                                 double *restrict lse)
{
    const int64_t c = g->c, d = g->d;
    if (d == 1) {
        float mx = x[0];
        D5_SIMD_MAX(mx)
        for (int64_t k = 0; k < c; k++) mx = x[k] > mx ? x[k] : mx;
        double sum = 0;
        D5_SIMD_SUM(sum)
        for (int64_t k = 0; k < c; k++) sum += d5__expf(x[k] - mx);
        m[0] = mx;
        lse[0] = mx + log(sum);
        return;
    }
    for (int64_t p = 0; p < d; p++) m[p] = x[p];
    for (int64_t k = 1; k < c; k++) {
        const float *xk = x + k * d;
        D5_SIMD
        for (int64_t p = 0; p < d; p++) m[p] = xk[p] > m[p] ? xk[p] : m[p];
    }
    for (int64_t p = 0; p < d; p++) lse[p] = 0;
    for (int64_t k = 0; k < c; k++) {
        const float *xk = x + k * d;
        D5_SIMD
        for (int64_t p = 0; p < d; p++) lse[p] += d5__expf(xk[p] - m[p]);
    }
    for (int64_t p = 0; p < d; p++) lse[p] = m[p] + log(lse[p]);
}

/* dscores of one sample: scale[p] (softmax - onehot(label)) with the
 * position's log-sum-exp lse[p]. */
static D5_CLONES void sample_grad(const dsce *g, const float *restrict x, const float *restrict lse,
                                  const float *restrict scale, float *restrict dx)
{
    const int64_t c = g->c, d = g->d;
    for (int64_t k = 0; k < c; k++) {
        const float *xk = x + k * d;
        float *dk = dx + k * d;
        D5_SIMD
        for (int64_t p = 0; p < d; p++) dk[p] = scale[p] * d5__expf(xk[p] - lse[p]);
    }
}

/* The positions not ignored, or D5_ERR_RANGE naming the first label outside
 * [0, C) that is not ignore_index. */
static d5_status count_labels(const dsce *g, const void *labels, int64_t *count)
{
    *count = 0;
    for (int64_t j = 0; j < g->n * g->d; j++) {
        int64_t y = label_at(g, labels, j);
        if (g->has_ignore && y == g->ignore_index) continue;
        if (y < 0 || y >= g->c)
            return d5_error(D5_ERR_RANGE,
                            NAME " (dnnl): label %lld at position %lld is outside [0, %lld)",
                            (long long)y, (long long)j, (long long)g->c);
        (*count)++;
    }
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const dsce *g = state;
    const float *x = call->inputs[0].data;
    const void *labels = call->inputs[1].data;
    int64_t count;
    d5_status s = count_labels(g, labels, &count);
    if (s != D5_OK) return s;
    /* Per sample: the maxima (floats) and log-sum-exps (doubles) of its positions. */
    float *maxima = d5_alloc((size_t)(g->d * g->n + 1) * sizeof *maxima, NAME);
    double *lses = d5_alloc((size_t)(g->d * g->n + 1) * sizeof *lses, NAME);
    double *loss = d5_calloc((size_t)g->n + 1, sizeof *loss, NAME);
    if (!maxima || !lses || !loss) {
        d5_free(maxima);
        d5_free(lses);
        d5_free(loss);
        return D5_ERR_NOMEM;
    }
    const int parallel = g->n > 1 && (double)g->n * g->c * g->d * 4 >= D5_PARALLEL_BYTES;
    D5_PARALLEL_RANGE(g->n, parallel, lo, hi, {
        for (int64_t i = lo; i < hi; i++) {
            double *lse = lses + i * g->d;
            const float *xs = x + i * g->c * g->d;
            sample_lse(g, xs, maxima + i * g->d, lse);
            for (int64_t p = 0; p < g->d; p++) {
                int64_t y = label_at(g, labels, i * g->d + p);
                if (!(g->has_ignore && y == g->ignore_index)) loss[i] += lse[p] - xs[y * g->d + p];
            }
        }
    })
    double total = 0;
    for (int64_t i = 0; i < g->n; i++) total += loss[i];
    ((float *)call->outputs[0].data)[0] = (float)(g->mean ? total / (double)count : total);
    d5_free(maxima);
    d5_free(lses);
    d5_free(loss);
    return D5_OK;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const dsce *g = state;
    float *dx = d5__dnnl_grad_begin(call, g->n * g->c * g->d);
    if (!dx) return D5_OK;
    const float *x = call->inputs[0].data;
    const void *labels = call->inputs[1].data;
    int64_t count;
    d5_status s = count_labels(g, labels, &count);
    if (s != D5_OK) return s;
    const double gy = ((const float *)call->grad_outputs[0].data)[0];
    const double scale = g->mean ? gy / (double)count : gy;
    /* Per sample: maxima, log-sum-exps, and each position's scale (0 where ignored). */
    float *f = d5_alloc((size_t)(3 * g->d * g->n + 1) * sizeof *f, NAME);
    double *lses = d5_alloc((size_t)(g->d * g->n + 1) * sizeof *lses, NAME);
    if (!f || !lses) {
        d5_free(f);
        d5_free(lses);
        return D5_ERR_NOMEM;
    }
    const int parallel = g->n > 1 && (double)g->n * g->c * g->d * 4 >= D5_PARALLEL_BYTES;
    D5_PARALLEL_RANGE(g->n, parallel, lo, hi, {
        for (int64_t i = lo; i < hi; i++) {
            float *m = f + 3 * i * g->d, *lse = m + g->d, *sc = lse + g->d;
            const float *xs = x + i * g->c * g->d;
            float *ds = dx + i * g->c * g->d;
            sample_lse(g, xs, m, lses + i * g->d);
            for (int64_t p = 0; p < g->d; p++) {
                int64_t y = label_at(g, labels, i * g->d + p);
                lse[p] = (float)lses[i * g->d + p];
                sc[p] = g->has_ignore && y == g->ignore_index ? 0.0f : (float)scale;
            }
            sample_grad(g, xs, lse, sc, ds);
            for (int64_t p = 0; p < g->d; p++) {
                int64_t y = label_at(g, labels, i * g->d + p);
                if (sc[p] != 0.0f) ds[y * g->d + p] -= sc[p];
            }
        }
    })
    d5_free(f);
    d5_free(lses);
    return D5_OK;
}

static void destroy(void *state)
{
    d5_free(state);
}

static void cost(void *state, double *flops, double *bytes)
{
    const dsce *g = state;
    double n = (double)g->n * (double)g->c * (double)g->d;
    *flops = 4 * n;
    *bytes = 4 * n;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_SoftmaxCrossEntropyLoss = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD,
    .name = "SoftmaxCrossEntropyLoss", .backend = "dnnl", .min_inputs = 2, .max_inputs = 3,
    .min_outputs = 1, .max_outputs = 2, .create = create, .forward = forward,
    .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
