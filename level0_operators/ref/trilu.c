/* Trilu (ONNX opset 14): keeps the upper (upper = 1, the default) or lower
 * (upper = 0) triangle of each matrix in the last two dimensions of the input
 * (rank >= 2, any data type) and zeroes the rest. The optional input k (an
 * int64 scalar or one-element tensor known at create, default 0) shifts the
 * diagonal: element (i, j) is kept when j - i >= k (upper) or j - i <= k
 * (lower). The gradient passes through the kept elements.
 * https://onnx.ai/onnx/operators/onnx__Trilu.html */
#include "util.h"

typedef struct trilu {
    int64_t rows, cols, k;
    int upper;
} trilu;

static d5_status trilu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "Trilu: input 0 (input) is required");
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, "Trilu: input has %d dims, expected at least 2",
                        (int)x->ndim);
    int64_t k = 0, n = 1, upper;
    d5_status s = D5_OK;
    if (d5__has_input(in, nin, 1)) s = d5__const_ints("Trilu", in, nin, 1, "k", &k, 1, &n);
    if (s == D5_OK && n != 1)
        return d5_error(D5_ERR_INVALID, "Trilu: input 1 (k) must hold one value, got %lld",
                        (long long)n);
    if (s == D5_OK) s = d5_attrs_int(attrs, "upper", 1, &upper);
    if (s != D5_OK) return s;
    trilu *t = d5_alloc(sizeof *t, "Trilu");
    if (!t) return D5_ERR_NOMEM;
    *t = (trilu){x->shape[x->ndim - 2], x->shape[x->ndim - 1], k, upper != 0};
    *state = t;
    out[0] = *x;
    return D5_OK;
}

/* 1 when flat element e is kept. */
static int kept(const trilu *t, int64_t e)
{
    int64_t j = e % t->cols, i = e / t->cols % t->rows;
    return t->upper ? j - i >= t->k : j - i <= t->k;
}

static d5_status trilu_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const trilu *t = state;
    for (int64_t e = 0; e < out[0].numel; e++) out[0].data[e] = kept(t, e) ? in[0].data[e] : 0;
    return D5_OK;
}

static d5_status trilu_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const trilu *t = state;
    if (gin[0].data)
        for (int64_t e = 0; e < out[0].numel; e++)
            if (kept(t, e)) gin[0].data[e] += gout[0].data[e];
    return D5_OK;
}

D5_REF_OPERATOR(Trilu, 1, 2, 1, 1, trilu_create, trilu_forward, trilu_backward, NULL, NULL);
