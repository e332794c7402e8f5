/* AveragePool (ONNX opset 19): the average of each sliding window over the
 * spatial axes of X (N x C x D1 x ... x Dn), with kernel_shape, strides, pads,
 * dilations, ceil_mode and auto_pad as described in pool.h. The divisor is the
 * number of window positions inside the input, or with count_include_pad 1
 * inside the padded input (explicit or auto_pad padding, not the overhang that
 * ceil_mode may add past the end padding), as in PyTorch and onnxruntime.
 * https://onnx.ai/onnx/operators/onnx__AveragePool.html */
#include "pool.h"

typedef struct averagepool {
    d5_pool p; /* first: d5__pool_flops reads it */
    int count_include_pad;
    int64_t idx[]; /* one window's offsets */
} averagepool;

static d5_status averagepool_create(const d5_op_create_args *args, void **state)
{
    d5_pool p;
    int64_t include;
    d5_status s = d5__need_float("AveragePool", args->inputs, args->ninputs, 0);
    if (s == D5_OK) s = d5__pool_create("AveragePool", args, "count_include_pad", &include, &p);
    if (s == D5_OK && !include) s = d5__pool_check_windows("AveragePool", &p);
    if (s != D5_OK) return s;
    averagepool *st = d5__pool_state(&p, sizeof *st, "AveragePool");
    if (!st) return D5_ERR_NOMEM;
    st->count_include_pad = include != 0;
    *state = st;
    return D5_OK;
}

/* Both passes, window by window. Forward: src is X and dst is Y, and each
 * output element is the sum of its window over the divisor. Backward: src is
 * dY and dst is dX, and each window position receives dY over the divisor. */
static void sweep(averagepool *st, const double *src, double *dst, int backward)
{
    const d5_pool *p = &st->p;
    for (int64_t o = 0; o < p->out_plane; o++) {
        int64_t padded, n = d5__pool_window(p, o, st->idx, &padded);
        double divisor = (double)(st->count_include_pad ? padded : n);
        for (int64_t c = 0; c < p->planes; c++) {
            if (backward) {
                double g = src[c * p->out_plane + o] / divisor, *gx = dst + c * p->in_plane;
                for (int64_t j = 0; j < n; j++) gx[st->idx[j]] += g;
            } else {
                const double *x = src + c * p->in_plane;
                double sum = 0;
                for (int64_t j = 0; j < n; j++) sum += x[st->idx[j]];
                dst[c * p->out_plane + o] = sum / divisor;
            }
        }
    }
}

static d5_status averagepool_forward(void *state, const d5_ref_call *call)
{
    sweep(state, call->inputs[0].data, call->outputs[0].data, 0);
    return D5_OK;
}

static d5_status averagepool_backward(void *state, const d5_ref_call *call)
{
    if (call->grad_inputs[0].data)
        sweep(state, call->grad_outputs[0].data, call->grad_inputs[0].data, 1);
    return D5_OK;
}

D5_REF_OPERATOR(AveragePool, 1, 1, 1, 1, averagepool_create, averagepool_forward,
                averagepool_backward, NULL, d5__pool_flops);
