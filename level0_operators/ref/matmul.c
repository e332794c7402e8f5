/* MatMul (ONNX opset 13): the matrix product of numpy.matmul. Inputs of rank
 * >= 2 are stacks of matrices over their leading (batch) dimensions, which
 * broadcast; a 1-d A is a row [1, K] and a 1-d B a column [K, 1], the added
 * dimension being removed from the result. A and B share one type, floating
 * point or a 32- or 64-bit integer; integer products wrap into the type.
 * https://onnx.ai/onnx/operators/onnx__MatMul.html */
#include "util.h"

typedef struct matmul {
    int64_t m, n, k;
    d5_tensor_desc a_batch, b_batch, y_batch; /* the batch dimensions */
} matmul;

/* The leading `nd` dimensions of d. */
static d5_tensor_desc leading(const d5_tensor_desc *d, int32_t nd)
{
    d5_tensor_desc b = *d;
    b.ndim = nd < 0 ? 0 : nd;
    return b;
}

static d5_status matmul_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    for (int32_t i = 0; i < 2; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "MatMul: input %c is required", "AB"[i]);
        d5_status s = d5__need_types("MatMul", in, nin, i, D5__WIDE);
        if (s != D5_OK) return s;
    }
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    char sa[96], sb[96];
    d5__shape_str(a, sa, sizeof sa);
    d5__shape_str(b, sb, sizeof sb);
    if (a->dtype != b->dtype)
        return d5_error(D5_ERR_INVALID, "MatMul: A has data type %s, B %s",
                        d5_dtype_name((d5_dtype)a->dtype), d5_dtype_name((d5_dtype)b->dtype));
    if (a->ndim == 0 || b->ndim == 0)
        return d5_error(D5_ERR_SHAPE, "MatMul: A is %s and B is %s: scalars are not allowed", sa,
                        sb);
    matmul g;
    g.m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    g.k = a->shape[a->ndim - 1];
    g.n = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    int64_t kb = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    if (kb != g.k)
        return d5_error(D5_ERR_SHAPE,
                        "MatMul: A is %s and B is %s: inner dimensions %lld and %lld differ", sa,
                        sb, (long long)g.k, (long long)kb);
    g.a_batch = leading(a, a->ndim - 2);
    g.b_batch = leading(b, b->ndim - 2);
    const d5_tensor_desc *both[2] = {&g.a_batch, &g.b_batch};
    g.y_batch = g.a_batch;
    if (d5__broadcast("MatMul", both, 2, &g.y_batch) != D5_OK)
        return d5_error(D5_ERR_SHAPE,
                        "MatMul: the batch dimensions of A %s and B %s do not broadcast", sa, sb);
    out[0] = g.y_batch;
    if (a->ndim >= 2) out[0].shape[out[0].ndim++] = g.m;
    if (b->ndim >= 2) out[0].shape[out[0].ndim++] = g.n;
    return d5__ref_state(state, &g, sizeof g, "MatMul");
}

static d5_status matmul_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const matmul *g = state;
    int64_t batch = d5_tensor_desc_numel(&g->y_batch);
    for (int64_t t = 0; t < batch; t++) {
        const double *a =
            in[0].data + d5__broadcast_index(&g->y_batch, &g->a_batch, t) * g->m * g->k;
        const double *b =
            in[1].data + d5__broadcast_index(&g->y_batch, &g->b_batch, t) * g->k * g->n;
        double *y = out[0].data + t * g->m * g->n;
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < g->k; p++) acc += a[i * g->k + p] * b[p * g->n + j];
                y[i * g->n + j] = acc;
            }
    }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* dA = dY B^T and dB = A^T dY per matrix, summed over broadcast batches. */
static d5_status matmul_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const matmul *g = state;
    int64_t batch = d5_tensor_desc_numel(&g->y_batch);
    for (int64_t t = 0; t < batch; t++) {
        int64_t oa = d5__broadcast_index(&g->y_batch, &g->a_batch, t) * g->m * g->k;
        int64_t ob = d5__broadcast_index(&g->y_batch, &g->b_batch, t) * g->k * g->n;
        const double *dy = gout[0].data + t * g->m * g->n;
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++)
                for (int64_t p = 0; p < g->k; p++) {
                    double d = dy[i * g->n + j];
                    if (gin[0].data)
                        gin[0].data[oa + i * g->k + p] += d * in[1].data[ob + p * g->n + j];
                    if (gin[1].data)
                        gin[1].data[ob + p * g->n + j] += d * in[0].data[oa + i * g->k + p];
                }
    }
    return D5_OK;
}

static double matmul_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const matmul *g = state;
    return 2.0 * (double)g->m * (double)g->n * (double)g->k *
           (double)d5_tensor_desc_numel(&g->y_batch);
}

D5_REF_OPERATOR(MatMul, 2, 2, 1, 1, matmul_create, matmul_forward, matmul_backward, NULL,
                matmul_flops);
