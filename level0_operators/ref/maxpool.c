/* MaxPool (ONNX opset 12): the maximum of each sliding window over the spatial
 * axes of X (N x C x D1 x ... x Dn), with kernel_shape, strides, pads,
 * dilations, ceil_mode and auto_pad as described in pool.h; padding is never
 * the maximum. The optional second output Indices (int64) holds the flat index
 * of each maximum in X, in [0, N*C*D1*...*Dn): row-major, or with
 * storage_order 1 column-major over the spatial axes (n*C + c) * D1*...*Dn +
 * d1 + D1 * (d2 + D2 * ...). On ties the first position of the window in
 * row-major kernel order wins, and the gradient flows to that position.
 * float32/float64 and, forward only, int8/uint8.
 * https://onnx.ai/onnx/operators/onnx__MaxPool.html */
#include "pool.h"

typedef struct maxpool {
    d5_pool p; /* first: d5__pool_flops reads it */
    int storage_order;
    int64_t idx[]; /* one window's offsets */
} maxpool;

static d5_status maxpool_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    d5_pool p;
    int64_t order;
    d5_status s = D5_OK;
    if (in[0].desc.dtype != D5_I8 && in[0].desc.dtype != D5_U8)
        s = d5__need_float("MaxPool", in, args->ninputs, 0);
    if (s == D5_OK) s = d5__pool_create("MaxPool", args, "storage_order", &order, &p);
    if (s == D5_OK) s = d5__pool_check_windows("MaxPool", &p);
    if (s != D5_OK) return s;
    if (order != 0 && order != 1)
        return d5_error(D5_ERR_INVALID, "MaxPool: storage_order is %lld, expected 0 or 1",
                        (long long)order);
    if (args->noutputs > 1) {
        out[1] = out[0];
        out[1].dtype = D5_I64;
    }
    maxpool *st = d5__pool_state(&p, sizeof *st, "MaxPool");
    if (!st) return D5_ERR_NOMEM;
    st->storage_order = (int)order;
    *state = st;
    return D5_OK;
}

/* Offset in its plane of the maximum of window o of plane x. */
static int64_t argmax(maxpool *st, const double *x, int64_t o)
{
    int64_t n = d5__pool_window(&st->p, o, st->idx, NULL), best = st->idx[0];
    for (int64_t j = 1; j < n; j++)
        if (x[st->idx[j]] > x[best]) best = st->idx[j];
    return best;
}

/* A row-major offset within a plane, renumbered column-major. */
static int64_t column_major(const d5_pool *p, int64_t offset)
{
    int64_t col = 0, stride = 1, coord[D5_POOL_MAX_AXES];
    for (int32_t i = p->naxes - 1; i >= 0; i--) {
        coord[i] = offset % p->in[i];
        offset /= p->in[i];
    }
    for (int32_t i = 0; i < p->naxes; i++) {
        col += coord[i] * stride;
        stride *= p->in[i];
    }
    return col;
}

static d5_status maxpool_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    maxpool *st = state;
    const d5_pool *p = &st->p;
    for (int64_t c = 0; c < p->planes; c++) {
        const double *x = in[0].data + c * p->in_plane;
        for (int64_t o = 0; o < p->out_plane; o++) {
            int64_t best = argmax(st, x, o);
            out[0].data[c * p->out_plane + o] = x[best];
            if (nout > 1)
                out[1].data[c * p->out_plane + o] =
                    (double)(c * p->in_plane + (st->storage_order ? column_major(p, best) : best));
        }
    }
    return D5_OK;
}

static d5_status maxpool_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    maxpool *st = state;
    const d5_pool *p = &st->p;
    if (!gin[0].data) return D5_OK;
    for (int64_t c = 0; c < p->planes; c++)
        for (int64_t o = 0; o < p->out_plane; o++)
            gin[0].data[c * p->in_plane + argmax(st, in[0].data + c * p->in_plane, o)] +=
                gout[0].data[c * p->out_plane + o];
    return D5_OK;
}

D5_REF_OPERATOR(MaxPool, 1, 1, 1, 2, maxpool_create, maxpool_forward, maxpool_backward, NULL,
                d5__pool_flops);
