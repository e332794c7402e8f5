/* SpaceToDepth (ONNX opset 13): rearranges an (N, C, H, W) input (any data
 * type) into (N, C * b^2, H / b, W / b) for the attribute blocksize b: each
 * b x b spatial tile becomes b^2 channels, the block position being the outer
 * part of the channel index:
 *   reshape (N, C, H/b, b, W/b, b), transpose (0, 3, 5, 1, 2, 4).
 * H and W must be multiples of b. It is the inverse of DepthToSpace in DCR
 * mode; the gradient moves the elements back.
 * https://onnx.ai/onnx/operators/onnx__SpaceToDepth.html */
#include "util.h"

typedef struct s2d {
    int64_t n, c, h, w, b; /* the input's dims and the block size */
} s2d;

static d5_status s2d_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "SpaceToDepth: input 0 is required");
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 4)
        return d5_error(D5_ERR_SHAPE, "SpaceToDepth: input has %d dims, expected 4 (N, C, H, W)",
                        (int)x->ndim);
    int64_t b;
    d5_status s = d5_attrs_int(attrs, "blocksize", 0, &b);
    if (s != D5_OK) return s;
    if (!d5_attrs_find(attrs, "blocksize") || b < 1)
        return d5_error(D5_ERR_INVALID, "SpaceToDepth: attribute blocksize is required and >= 1");
    if (x->shape[2] % b != 0 || x->shape[3] % b != 0)
        return d5_error(D5_ERR_SHAPE,
                        "SpaceToDepth: height %lld and width %lld must be multiples of blocksize "
                        "%lld",
                        (long long)x->shape[2], (long long)x->shape[3], (long long)b);
    s2d *st = d5_alloc(sizeof *st, "SpaceToDepth");
    if (!st) return D5_ERR_NOMEM;
    *st = (s2d){x->shape[0], x->shape[1], x->shape[2], x->shape[3], b};
    *state = st;
    out[0] = *x;
    out[0].shape[1] = x->shape[1] * b * b;
    out[0].shape[2] = x->shape[2] / b;
    out[0].shape[3] = x->shape[3] / b;
    return D5_OK;
}

/* The flat input index of output element i. */
static int64_t source(const void *state, int64_t i)
{
    const s2d *p = state;
    int64_t b = p->b, oh = p->h / b, ow = p->w / b;
    int64_t w = i % ow, h = i / ow % oh, oc = i / (ow * oh) % (p->c * b * b);
    int64_t n = i / (ow * oh * p->c * b * b);
    int64_t c = oc % p->c, blk = oc / p->c;
    return ((n * p->c + c) * p->h + h * b + blk / b) * p->w + w * b + blk % b;
}

static d5_status s2d_forward(void *state, const d5_ref_call *call)
{
    return d5__source_forward(source, state, call);
}

static d5_status s2d_backward(void *state, const d5_ref_call *call)
{
    return d5__source_backward(source, state, call);
}

D5_REF_OPERATOR(SpaceToDepth, 1, 1, 1, 1, s2d_create, s2d_forward, s2d_backward, NULL, NULL);
