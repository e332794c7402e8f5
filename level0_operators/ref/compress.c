/* Compress (ONNX opset 11; opset 9 without negative axes): the slices of
 * `input` (any data type) along `axis` (attribute; negative counts from the
 * back) where the 1-d bool `condition` is true; without axis, the elements of
 * the flattened input where it is true, as a 1-d tensor. condition may be
 * shorter than the axis (or the flattened input): the slices past its end are
 * dropped; a longer one is D5_ERR_SHAPE. The output's shape depends on
 * condition's values, so condition must be known at create (a constant or
 * initializer): otherwise D5_ERR_UNSUPPORTED. The gradient with respect to
 * input puts the output gradient back at the slices kept.
 * https://onnx.ai/onnx/operators/onnx__Compress.html */
#include "extra.h"

typedef struct compress {
    int64_t outer, n, inner; /* input as [outer, n, inner] around the axis */
    int64_t kept;            /* slices kept */
    int64_t slices[];        /* their positions along the axis, ascending */
} compress;

static d5_status compress_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "Compress: input 0 (input) is required");
    d5_status s = d5__need_types("Compress", in, nin, 0, D5__ANY);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, "Compress: input 1 (condition) is required");
    const d5_tensor_desc *x = &in[0].desc, *c = &in[1].desc;
    if (c->dtype != D5_BOOL)
        return d5_error(D5_ERR_INVALID,
                        "Compress: input 1 (condition) has data type %s, expected bool",
                        d5_dtype_name((d5_dtype)c->dtype));
    if (c->ndim != 1)
        return d5_error(D5_ERR_SHAPE, "Compress: input 1 (condition) has %d dims, expected 1",
                        (int)c->ndim);
    int has_axis = d5_attrs_find(attrs, "axis") != NULL;
    int64_t axis = 0;
    int32_t ax = 0;
    if (has_axis) {
        s = d5_attrs_int(attrs, "axis", 0, &axis);
        if (s == D5_OK) s = d5__axis("Compress", axis, x->ndim, &ax);
        if (s != D5_OK) return s;
    }
    int64_t outer = 1, n = d5_tensor_desc_numel(x), inner = 1;
    if (has_axis) {
        n = x->shape[ax];
        for (int32_t d = 0; d < ax; d++) outer *= x->shape[d];
        for (int32_t d = ax + 1; d < x->ndim; d++) inner *= x->shape[d];
    }
    if (c->shape[0] > n)
        return d5_error(D5_ERR_SHAPE,
                        "Compress: input 1 (condition) has %lld values, more than the %lld %s",
                        (long long)c->shape[0], (long long)n,
                        has_axis ? "slices along the axis" : "elements of the input");
    double *cond = NULL;
    int64_t nc = 0;
    s = d5__known_values("Compress", in, nin, 1, "condition", &cond, &nc);
    if (s != D5_OK) return s;
    compress *st = d5_alloc(sizeof *st + (size_t)(nc ? nc : 1) * sizeof(int64_t), "Compress");
    if (!st) {
        d5_free(cond);
        return D5_ERR_NOMEM;
    }
    *st = (compress){outer, n, inner, 0};
    for (int64_t i = 0; i < nc; i++)
        if (cond[i] != 0) st->slices[st->kept++] = i;
    d5_free(cond);
    *state = st;
    if (has_axis) {
        out[0] = *x;
        out[0].shape[ax] = st->kept;
    } else {
        out[0].dtype = x->dtype;
        out[0].ndim = 1;
        out[0].shape[0] = st->kept;
    }
    return D5_OK;
}

/* The flat input index of output element i: slice slices[j] of block o. */
static int64_t source(const void *state, int64_t i)
{
    const compress *st = state;
    int64_t o = i / (st->kept * st->inner), j = i / st->inner % st->kept;
    return (o * st->n + st->slices[j]) * st->inner + i % st->inner;
}

static d5_status compress_forward(void *state, const d5_ref_call *call)
{
    return d5__source_forward(source, state, call);
}

static d5_status compress_backward(void *state, const d5_ref_call *call)
{
    return d5__source_backward(source, state, call);
}

D5_REF_OPERATOR(Compress, 2, 2, 1, 1, compress_create, compress_forward, compress_backward, NULL,
                NULL);
