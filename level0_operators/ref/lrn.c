/* LRN (ONNX opset 13): local response normalisation across channels. For X
 * (N x C x D1 x ... x Dk),
 *   Y[n, c, d] = X[n, c, d] / (bias + alpha / size * square_sum[n, c, d]) ^ beta,
 * where square_sum sums X[n, i, d]^2 over the channels
 *   max(0, c - floor((size - 1) / 2)) <= i <= min(C - 1, c + ceil((size - 1) / 2)).
 * https://onnx.ai/onnx/operators/onnx__LRN.html */
#include "util.h"

#include <math.h>

typedef struct lrn {
    int64_t n, c, inner;   /* X seen as n x c x inner */
    int64_t before, after; /* channels summed before and after c */
    double size, alpha, beta, bias;
} lrn;

static d5_status lrn_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    lrn l;
    int64_t size;
    d5_status s = d5__need_float("LRN", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1e-4, &l.alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "beta", 0.75, &l.beta);
    if (s == D5_OK) s = d5_attrs_float(attrs, "bias", 1.0, &l.bias);
    if (s == D5_OK && !d5_attrs_find(attrs, "size"))
        s = d5_error(D5_ERR_INVALID, "LRN: attribute size is required");
    if (s == D5_OK) s = d5_attrs_int(attrs, "size", 0, &size);
    if (s != D5_OK) return s;
    if (size < 1)
        return d5_error(D5_ERR_INVALID, "LRN: size is %lld, must be positive", (long long)size);
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, "LRN: input has %d dims, expected at least 2 (N x C x ...)",
                        (int)x->ndim);
    l.n = x->shape[0];
    l.c = x->shape[1];
    l.inner = 1;
    for (int32_t i = 2; i < x->ndim; i++) l.inner *= x->shape[i];
    l.before = (size - 1) / 2; /* floor((size - 1) / 2) */
    l.after = size / 2;        /* ceil((size - 1) / 2) */
    l.size = (double)size;
    out[0] = *x;
    return d5__ref_state(state, &l, sizeof l, "LRN");
}

/* First and last channel of the window of channel c. */
static int64_t first(const lrn *l, int64_t c)
{
    return c - l->before > 0 ? c - l->before : 0;
}
static int64_t last(const lrn *l, int64_t c)
{
    return c + l->after < l->c - 1 ? c + l->after : l->c - 1;
}

/* bias + alpha / size * square_sum at (k, c, i). */
static double denominator(const lrn *l, const double *x, int64_t k, int64_t c, int64_t i)
{
    double sum = 0;
    for (int64_t j = first(l, c); j <= last(l, c); j++) {
        double v = x[(k * l->c + j) * l->inner + i];
        sum += v * v;
    }
    return l->bias + l->alpha / l->size * sum;
}

static d5_status lrn_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const lrn *l = state;
    for (int64_t k = 0; k < l->n; k++)
        for (int64_t c = 0; c < l->c; c++)
            for (int64_t i = 0; i < l->inner; i++) {
                int64_t e = (k * l->c + c) * l->inner + i;
                out[0].data[e] = in[0].data[e] / pow(denominator(l, in[0].data, k, c, i), l->beta);
            }
    return D5_OK;
}

/* With D_c the denominator of channel c:
 * dX_j = dY_j D_j^-beta - 2 beta alpha / size * X_j * sum over the channels c
 * whose window holds j of dY_c X_c D_c^(-beta-1). */
static d5_status lrn_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const lrn *l = state;
    const double *x = in[0].data, *dy = gout[0].data;
    double *dx = gin[0].data;
    if (!dx) return D5_OK;
    for (int64_t k = 0; k < l->n; k++)
        for (int64_t c = 0; c < l->c; c++)
            for (int64_t i = 0; i < l->inner; i++) {
                int64_t e = (k * l->c + c) * l->inner + i;
                double d = denominator(l, x, k, c, i);
                dx[e] += dy[e] * pow(d, -l->beta);
                double common =
                    -2 * l->beta * l->alpha / l->size * dy[e] * x[e] * pow(d, -l->beta - 1);
                for (int64_t j = first(l, c); j <= last(l, c); j++) {
                    int64_t ej = (k * l->c + j) * l->inner + i;
                    dx[ej] += common * x[ej];
                }
            }
    return D5_OK;
}

/* size multiply-adds for the square sum, then a power and a division. */
static double lrn_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    const lrn *l = state;
    return (2 * l->size + 4) * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(LRN, 1, 1, 1, 1, lrn_create, lrn_forward, lrn_backward, NULL, lrn_flops);
