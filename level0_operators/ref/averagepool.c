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
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_pool p;
    int64_t include;
    d5_status s = d5__need_float("AveragePool", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "count_include_pad", 0, &include);
    if (s == D5_OK) s = d5__pool_init("AveragePool", &in[0].desc, attrs, &p, &out[0]);
    if (s == D5_OK && !include) s = d5__pool_check_windows("AveragePool", &p);
    if (s != D5_OK) return s;
    averagepool *st = d5_alloc(sizeof *st + (size_t)p.window * sizeof(int64_t), "AveragePool");
    if (!st) return D5_ERR_NOMEM;
    st->p = p;
    st->count_include_pad = include != 0;
    *state = st;
    return D5_OK;
}

/* The positions of window o (in st->idx), their number, and the divisor. */
static int64_t window(averagepool *st, int64_t o, double *divisor)
{
    int64_t padded, n = d5__pool_window(&st->p, o, st->idx, &padded);
    *divisor = (double)(st->count_include_pad ? padded : n);
    return n;
}

static d5_status averagepool_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    averagepool *st = state;
    const d5_pool *p = &st->p;
    for (int64_t o = 0; o < p->out_plane; o++) {
        double divisor;
        int64_t n = window(st, o, &divisor);
        for (int64_t c = 0; c < p->planes; c++) {
            const double *x = in[0].data + c * p->in_plane;
            double sum = 0;
            for (int64_t j = 0; j < n; j++) sum += x[st->idx[j]];
            out[0].data[c * p->out_plane + o] = sum / divisor;
        }
    }
    return D5_OK;
}

static d5_status averagepool_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    averagepool *st = state;
    const d5_pool *p = &st->p;
    if (!gin[0].data) return D5_OK;
    for (int64_t o = 0; o < p->out_plane; o++) {
        double divisor;
        int64_t n = window(st, o, &divisor);
        for (int64_t c = 0; c < p->planes; c++) {
            double g = gout[0].data[c * p->out_plane + o] / divisor;
            for (int64_t j = 0; j < n; j++) gin[0].data[c * p->in_plane + st->idx[j]] += g;
        }
    }
    return D5_OK;
}

D5_REF_OPERATOR(AveragePool, 1, 1, 1, 1, averagepool_create, averagepool_forward,
                averagepool_backward, NULL, d5__pool_flops);
