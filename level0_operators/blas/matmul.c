/* MatMul (ONNX opset 13) on OpenBLAS, float32: numpy matmul semantics with
 * 1-d operands promoted and broadcast batch dimensions; one sgemm per batch.
 * https://onnx.ai/onnx/operators/onnx__MatMul.html */
#include "blas.h"

#include <string.h>

typedef struct bmatmul {
    int64_t m, n, k, batch;
    int32_t nbatch;                                         /* batch dims of the output */
    int64_t out_batch[D5_MAX_DIMS];                         /* their sizes */
    int64_t a_bstride[D5_MAX_DIMS], b_bstride[D5_MAX_DIMS]; /* per output batch dim, in matrices */
} bmatmul;

/* Matrix offset of batch index `bi` for one operand. */
static int64_t batch_offset(const bmatmul *g, const int64_t *bstride, int64_t bi)
{
    int64_t off = 0;
    for (int32_t d = g->nbatch - 1; d >= 0; d--) {
        off += (bi % g->out_batch[d]) * bstride[d];
        bi /= g->out_batch[d];
    }
    return off;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__blas_need_f32("MatMul", in, nin, 0);
    if (s == D5_OK) s = d5__blas_need_f32("MatMul", in, nin, 1);
    if (s != D5_OK) return s;
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    if (a->ndim < 1 || b->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "MatMul: operands must have at least 1 dimension");
    bmatmul g;
    memset(&g, 0, sizeof g);
    int64_t am = a->ndim == 1 ? 1 : a->shape[a->ndim - 2], ak = a->shape[a->ndim - 1];
    int64_t bk = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    int64_t bn = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (ak != bk)
        return d5_error(D5_ERR_SHAPE, "MatMul: inner dimensions differ (%lld vs %lld)",
                        (long long)ak, (long long)bk);
    g.m = am;
    g.n = bn;
    g.k = ak;
    int32_t abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
    g.nbatch = abat > bbat ? abat : bbat;
    g.batch = 1;
    int64_t astr = 1, bstr = 1;
    for (int32_t d = g.nbatch - 1; d >= 0; d--) {
        int32_t ja = d - (g.nbatch - abat), jb = d - (g.nbatch - bbat);
        int64_t sa = ja >= 0 ? a->shape[ja] : 1, sb = jb >= 0 ? b->shape[jb] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return d5_error(D5_ERR_SHAPE,
                            "MatMul: batch dimension %d does not broadcast (%lld vs %lld)", (int)d,
                            (long long)sa, (long long)sb);
        g.out_batch[d] = sa > sb ? sa : sb;
        g.a_bstride[d] = sa == 1 ? 0 : astr;
        g.b_bstride[d] = sb == 1 ? 0 : bstr;
        astr *= sa;
        bstr *= sb;
        g.batch *= g.out_batch[d];
    }
    out[0].dtype = D5_F32;
    out[0].ndim = 0;
    for (int32_t d = 0; d < g.nbatch; d++) out[0].shape[out[0].ndim++] = g.out_batch[d];
    if (a->ndim > 1) out[0].shape[out[0].ndim++] = g.m;
    if (b->ndim > 1) out[0].shape[out[0].ndim++] = g.n;
    bmatmul *st = d5_alloc(sizeof *st, "MatMul");
    if (!st) return D5_ERR_NOMEM;
    *st = g;
    *state = st;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const bmatmul *g = state;
    const float *a = in[0].data, *b = in[1].data;
    float *y = out[0].data;
    for (int64_t bi = 0; bi < g->batch; bi++)
        d5__sgemm(0, 0, g->m, g->n, g->k, 1.0f, a + batch_offset(g, g->a_bstride, bi) * g->m * g->k,
                  g->k, b + batch_offset(g, g->b_bstride, bi) * g->k * g->n, g->n, 0.0f,
                  y + bi * g->m * g->n, g->n);
    return D5_OK;
}

/* dA_b += dY_b B_b^T, dB_b += A_b^T dY_b; broadcast operands accumulate (beta 1). */
static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    const bmatmul *g = state;
    const float *a = in[0].data, *b = in[1].data, *dy = gout[0].data;
    if (gin[0].data) memset(gin[0].data, 0, (size_t)d5_tensor_desc_numel(&in[0].desc) * 4);
    if (gin[1].data) memset(gin[1].data, 0, (size_t)d5_tensor_desc_numel(&in[1].desc) * 4);
    for (int64_t bi = 0; bi < g->batch; bi++) {
        int64_t oa = batch_offset(g, g->a_bstride, bi) * g->m * g->k;
        int64_t ob = batch_offset(g, g->b_bstride, bi) * g->k * g->n;
        const float *d = dy + bi * g->m * g->n;
        if (gin[0].data)
            d5__sgemm(0, 1, g->m, g->k, g->n, 1.0f, d, g->n, b + ob, g->n, 1.0f,
                      (float *)gin[0].data + oa, g->k);
        if (gin[1].data)
            d5__sgemm(1, 0, g->k, g->n, g->m, 1.0f, a + oa, g->k, d, g->n, 1.0f,
                      (float *)gin[1].data + ob, g->n);
    }
    return D5_OK;
}

static void cost(void *state, double *flops, double *bytes)
{
    const bmatmul *g = state;
    *flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
    *bytes =
        4.0 * (double)g->batch *
        ((double)g->m * (double)g->k + (double)g->k * (double)g->n + (double)g->m * (double)g->n);
}

static void destroy(void *state)
{
    d5_free(state);
}

/* clang-format off */
const d5_op_desc d5__op_blas_MatMul = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD, .name = "MatMul",
    .backend = "blas", .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = create, .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
