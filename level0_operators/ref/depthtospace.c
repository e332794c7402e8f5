/* DepthToSpace (ONNX opset 13): rearranges an (N, C, H, W) input (any data
 * type) into (N, C / b^2, H * b, W * b) for the attribute blocksize b: blocks
 * of b x b channels become b x b spatial tiles. mode "DCR" (the default, depth
 * then column then row) takes the block position as the outer part of the
 * channel index, "CRD" as the inner part:
 *   DCR: reshape (N, b, b, C/b^2, H, W), transpose (0, 3, 4, 1, 5, 2)
 *   CRD: reshape (N, C/b^2, b, b, H, W), transpose (0, 1, 4, 2, 5, 3)
 * It moves elements only, so the gradient moves them back. SpaceToDepth
 * (spacetodepth.c) is its inverse in DCR mode.
 * https://onnx.ai/onnx/operators/onnx__DepthToSpace.html */
#include "util.h"

#include <string.h>

typedef struct d2s {
    int64_t n, c, h, w, b; /* the output's dims and the block size */
    int crd;
} d2s;

static d5_status d2s_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "DepthToSpace: input 0 is required");
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 4)
        return d5_error(D5_ERR_SHAPE, "DepthToSpace: input has %d dims, expected 4 (N, C, H, W)",
                        (int)x->ndim);
    int64_t b;
    const char *mode;
    d5_status s = d5_attrs_int(attrs, "blocksize", 0, &b);
    if (s == D5_OK) s = d5_attrs_string(attrs, "mode", "DCR", &mode);
    if (s != D5_OK) return s;
    if (!d5_attrs_find(attrs, "blocksize") || b < 1)
        return d5_error(D5_ERR_INVALID, "DepthToSpace: attribute blocksize is required and >= 1");
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
        return d5_error(D5_ERR_INVALID, "DepthToSpace: mode '%s' is not DCR or CRD", mode);
    if (x->shape[1] % (b * b) != 0)
        return d5_error(D5_ERR_SHAPE,
                        "DepthToSpace: %lld channels are not a multiple of blocksize^2 = %lld",
                        (long long)x->shape[1], (long long)(b * b));
    d2s *st = d5_alloc(sizeof *st, "DepthToSpace");
    if (!st) return D5_ERR_NOMEM;
    *st = (d2s){x->shape[0], x->shape[1] / (b * b),   x->shape[2] * b, x->shape[3] * b,
                b,           strcmp(mode, "CRD") == 0};
    *state = st;
    out[0] = *x;
    out[0].shape[1] = st->c;
    out[0].shape[2] = st->h;
    out[0].shape[3] = st->w;
    return D5_OK;
}

/* The flat input index of output element i, (n, c, h, w). */
static int64_t source(const void *state, int64_t i)
{
    const d2s *p = state;
    int64_t w = i % p->w, h = i / p->w % p->h, c = i / (p->w * p->h) % p->c;
    int64_t n = i / (p->w * p->h * p->c);
    int64_t b = p->b, bh = h % b, bw = w % b, ic;
    ic = p->crd ? (c * b + bh) * b + bw : (bh * b + bw) * p->c + c;
    int64_t ih = p->h / b, iw = p->w / b;
    return ((n * p->c * b * b + ic) * ih + h / b) * iw + w / b;
}

static d5_status d2s_forward(void *state, const d5_ref_call *call)
{
    return d5__source_forward(source, state, call);
}

static d5_status d2s_backward(void *state, const d5_ref_call *call)
{
    return d5__source_backward(source, state, call);
}

D5_REF_OPERATOR(DepthToSpace, 1, 1, 1, 1, d2s_create, d2s_forward, d2s_backward, NULL, NULL);
