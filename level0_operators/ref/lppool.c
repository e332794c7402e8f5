/* LpPool (ONNX opsets 1 to 22; read with opset 18's attributes): the Lp norm
 * (sum of |x|^p) ^ (1 / p) of each sliding window over the spatial axes of X
 * (N x C x D1 x ... x Dn), with kernel_shape, strides, pads, dilations,
 * ceil_mode and auto_pad as described in pool.h. Padding holds zeros, so a
 * window sums the positions that lie inside the input, as ONNX's test data
 * (onnx/backend/test/case/node/lppool.py) computes it. p is an integer
 * attribute from opset 2 (default 2) and a float one in opset 1; it must be
 * positive.
 *
 * The gradient: dY/dx = sign(x) |x|^(p - 1) / Y^(p - 1) for each window
 * position x, and 0 for a window whose norm is 0.
 * https://onnx.ai/onnx/operators/onnx__LpPool.html */
#include "pool.h"

#include <math.h>

typedef struct lppool {
    d5_pool p; /* first: d5__pool_flops reads it */
    double power;
    int64_t idx[]; /* one window's offsets */
} lppool;

/* Reads p: an INT from opset 2, a FLOAT in opset 1 (either is taken). */
static d5_status read_p(const d5_attrs *attrs, double *p)
{
    const d5_attr *a = d5_attrs_find(attrs, "p");
    *p = 2;
    if (a && a->type == D5_ATTR_FLOAT)
        *p = a->f;
    else if (a && a->type == D5_ATTR_INT)
        *p = (double)a->i;
    else if (a)
        return d5_error(D5_ERR_INVALID, "LpPool: attribute p must be an integer (or a float)");
    if (!(*p > 0) || !isfinite(*p))
        return d5_error(D5_ERR_INVALID, "LpPool: p is %g, must be positive", *p);
    return D5_OK;
}

static d5_status lppool_create(const d5_op_create_args *args, void **state)
{
    d5_pool p;
    double power;
    d5_status s = d5__need_float("LpPool", args->inputs, args->ninputs, 0);
    if (s == D5_OK) s = read_p(args->attrs, &power);
    if (s == D5_OK)
        s = d5__pool_init("LpPool", &args->inputs[0].desc, args->attrs, &p, &args->outputs[0]);
    if (s != D5_OK) return s;
    lppool *st = d5__pool_state(&p, sizeof *st, "LpPool");
    if (!st) return D5_ERR_NOMEM;
    st->power = power;
    *state = st;
    return D5_OK;
}

/* |v|^p, with the common powers exact. */
static double abs_pow(double v, double p)
{
    v = fabs(v);
    return p == 1 ? v : p == 2 ? v * v : pow(v, p);
}

static d5_status lppool_forward(void *state, const d5_ref_call *call)
{
    lppool *st = state;
    const d5_pool *p = &st->p;
    const double *x = call->inputs[0].data;
    double *y = call->outputs[0].data;
    for (int64_t o = 0; o < p->out_plane; o++) {
        int64_t n = d5__pool_window(p, o, st->idx, NULL);
        for (int64_t c = 0; c < p->planes; c++) {
            const double *plane = x + c * p->in_plane;
            double sum = 0;
            for (int64_t j = 0; j < n; j++) sum += abs_pow(plane[st->idx[j]], st->power);
            y[c * p->out_plane + o] = st->power == 2 ? sqrt(sum) : pow(sum, 1 / st->power);
        }
    }
    return D5_OK;
}

static d5_status lppool_backward(void *state, const d5_ref_call *call)
{
    lppool *st = state;
    const d5_pool *p = &st->p;
    double *gx = call->grad_inputs[0].data;
    if (!gx) return D5_OK;
    const double *x = call->inputs[0].data, *y = call->outputs[0].data;
    const double *gy = call->grad_outputs[0].data;
    for (int64_t o = 0; o < p->out_plane; o++) {
        int64_t n = d5__pool_window(p, o, st->idx, NULL);
        for (int64_t c = 0; c < p->planes; c++) {
            double norm = y[c * p->out_plane + o];
            if (norm == 0) continue;
            double scale = gy[c * p->out_plane + o] / abs_pow(norm, st->power - 1);
            const double *plane = x + c * p->in_plane;
            double *gplane = gx + c * p->in_plane;
            for (int64_t j = 0; j < n; j++) {
                double v = plane[st->idx[j]];
                if (v != 0) gplane[st->idx[j]] += scale * copysign(abs_pow(v, st->power - 1), v);
            }
        }
    }
    return D5_OK;
}

D5_REF_OPERATOR(LpPool, 1, 1, 1, 1, lppool_create, lppool_forward, lppool_backward, NULL,
                d5__pool_flops);
