/* MatMul (ONNX opset 13) on cuBLAS, float32, device memory: numpy matmul
 * with 1-d operands promoted (A (K) is 1 x K, B (K) is K x 1, and the added
 * dimension is dropped from Y) and batch dimensions.
 * https://onnx.ai/onnx/operators/onnx__MatMul.html
 *
 * The batch runs as one cublasSgemmStridedBatched, which needs each operand
 * to be either a full batch (its batch dimensions are those of Y) or a single
 * matrix repeated with stride 0 (no batch dimensions, or all of size 1).
 * Other broadcasts ([2,3,M,K] times [3,K,N]) are declined with
 * D5_ERR_UNSUPPORTED so that the caller falls back to another backend.
 * A batch times one matrix is one sgemm of (batch * M) rows, forward and for
 * the gradient of that matrix. The gradient of a single A against a batch
 * of B sums the batch: one sgemm per batch entry, accumulating (beta 1). */
#include "cuda_util.h"

#include <string.h>

typedef struct cmatmul {
    cublasHandle_t h;
    int64_t m, n, k, batch;
    int a_full, b_full; /* a full batch (stride one matrix) or a single matrix (stride 0) */
    int fold;           /* A a full batch, B single: one sgemm of batch * M rows */
} cmatmul;

static const char *const OP = "MatMul";

static void destroy(void *state)
{
    cmatmul *g = state;
    if (!g) return;
    d5__cublas_free(g->h);
    d5_free(g);
}

/* Product of an operand's batch dimensions (all but its last two). */
static int64_t batch_of(const d5_tensor_desc *d)
{
    int64_t b = 1;
    for (int32_t i = 0; i + 2 < d->ndim; i++) b *= d->shape[i];
    return b;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__cuda_inputs_f32(OP, in, args->ninputs, 2, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    if (a->ndim < 1 || b->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "MatMul (cuda): operands must have at least 1 dimension");
    cmatmul g;
    memset(&g, 0, sizeof g);
    g.m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    g.k = a->shape[a->ndim - 1];
    int64_t bk = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    g.n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (g.k != bk)
        return d5_error(D5_ERR_SHAPE, "MatMul (cuda): inner dimensions differ (%lld vs %lld)",
                        (long long)g.k, (long long)bk);
    /* Batch dimensions of Y: numpy broadcasting, aligned at the end. */
    int32_t abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
    int32_t nb = abat > bbat ? abat : bbat;
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    g.batch = 1;
    for (int32_t d = 0; d < nb; d++) {
        int32_t ja = d - (nb - abat), jb = d - (nb - bbat);
        int64_t sa = ja >= 0 ? a->shape[ja] : 1, sb = jb >= 0 ? b->shape[jb] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return d5_error(D5_ERR_SHAPE,
                            "MatMul (cuda): batch dimension %d does not broadcast (%lld vs %lld)",
                            (int)d, (long long)sa, (long long)sb);
        out[0].shape[out[0].ndim++] = sa > sb ? sa : sb;
        g.batch *= sa > sb ? sa : sb;
    }
    if (a->ndim > 1) out[0].shape[out[0].ndim++] = g.m;
    if (b->ndim > 1) out[0].shape[out[0].ndim++] = g.n;
    int64_t ba = batch_of(a), bb = batch_of(b);
    g.a_full = g.batch > 1 && ba == g.batch;
    g.b_full = g.batch > 1 && bb == g.batch;
    if ((ba != 1 && !g.a_full) || (bb != 1 && !g.b_full))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "MatMul (cuda): input %d has %lld matrices for a batch of %lld; cuBLAS's "
                        "strided batches take a full batch or a single matrix",
                        ba != 1 && !g.a_full ? 0 : 1, (long long)(ba != 1 && !g.a_full ? ba : bb),
                        (long long)g.batch);
    if (g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "MatMul (cuda): empty operands are not supported");
    int dummy;
    s = d5__cuda_int(g.batch, OP, "the batch", &dummy);
    if (s == D5_OK) s = d5__cuda_int(g.m * g.k, OP, "M * K", &dummy);
    if (s == D5_OK) s = d5__cuda_int(g.k * g.n, OP, "K * N", &dummy);
    if (s == D5_OK) s = d5__cuda_int(g.m * g.n, OP, "M * N", &dummy);
    if (s != D5_OK) return s;
    g.fold = !g.b_full && g.batch * g.m <= 0x7fffffff;
    g.fold = g.fold && (g.a_full || g.batch == 1);
    cmatmul *st = d5_alloc(sizeof *st, "MatMul (cuda)");
    if (!st) return D5_ERR_NOMEM;
    *st = g;
    int tf32 = 0;
    st->h = NULL;
    s = d5__cuda_precision(args->attrs, OP, &tf32);
    if (s == D5_OK) s = d5__cublas_create(&st->h, OP);
    if (s == D5_OK && tf32)
        s = d5__cublas_check(cublasSetMathMode(st->h, CUBLAS_TF32_TENSOR_OP_MATH), OP,
                             "cublasSetMathMode (TF32)");
    return d5__cuda_created(s, st, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const cmatmul *g = state;
    d5_status s = d5__cuda_call_on_device(OP, call);
    if (s != D5_OK) return s;
    if (g->fold)
        return d5__cuda_sgemm(g->h, OP, 0, 0, g->batch * g->m, g->n, g->k, 1.0f, in[0].data, g->k,
                              in[1].data, g->n, 0.0f, out[0].data, g->n);
    return d5__cuda_sgemm_batched(g->h, OP, 0, 0, g->m, g->n, g->k, 1.0f, in[0].data, g->k,
                                  g->a_full ? g->m * g->k : 0, in[1].data, g->n,
                                  g->b_full ? g->k * g->n : 0, 0.0f, out[0].data, g->n, g->m * g->n,
                                  g->batch);
}

/* dA = dY B^T: per batch entry, or summed over the batch when A is single. */
static d5_status grad_a(const cmatmul *g, const float *dy, const float *b, float *da)
{
    if (g->fold)
        return d5__cuda_sgemm(g->h, OP, 0, 1, g->batch * g->m, g->k, g->n, 1.0f, dy, g->n, b, g->n,
                              0.0f, da, g->k);
    if (g->a_full)
        return d5__cuda_sgemm_batched(g->h, OP, 0, 1, g->m, g->k, g->n, 1.0f, dy, g->n, g->m * g->n,
                                      b, g->n, g->b_full ? g->k * g->n : 0, 0.0f, da, g->k,
                                      g->m * g->k, g->batch);
    d5_status s = D5_OK;
    for (int64_t i = 0; s == D5_OK && i < g->batch; i++)
        s = d5__cuda_sgemm(g->h, OP, 0, 1, g->m, g->k, g->n, 1.0f, dy + i * g->m * g->n, g->n,
                           b + (g->b_full ? i * g->k * g->n : 0), g->n, i ? 1.0f : 0.0f, da, g->k);
    return s;
}

/* dB = A^T dY: per batch entry, or summed over the batch when B is single. */
static d5_status grad_b(const cmatmul *g, const float *a, const float *dy, float *db)
{
    if (g->fold) /* A^T (K x batch*M) times dY (batch*M x N) sums the batch */
        return d5__cuda_sgemm(g->h, OP, 1, 0, g->k, g->n, g->batch * g->m, 1.0f, a, g->k, dy, g->n,
                              0.0f, db, g->n);
    if (g->b_full)
        return d5__cuda_sgemm_batched(g->h, OP, 1, 0, g->k, g->n, g->m, 1.0f, a, g->k,
                                      g->a_full ? g->m * g->k : 0, dy, g->n, g->m * g->n, 0.0f, db,
                                      g->n, g->k * g->n, g->batch);
    d5_status s = D5_OK;
    for (int64_t i = 0; s == D5_OK && i < g->batch; i++)
        s = d5__cuda_sgemm(g->h, OP, 1, 0, g->k, g->n, g->m, 1.0f,
                           a + (g->a_full ? i * g->m * g->k : 0), g->k, dy + i * g->m * g->n, g->n,
                           i ? 1.0f : 0.0f, db, g->n);
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const float *dy = call->grad_outputs[0].data;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    const cmatmul *g = state;
    d5_status s = d5__cuda_call_on_device(OP, call);
    if (s != D5_OK) return s;
    if (!dy) return d5__cuda_zero_grads(OP, call); /* no gradient flows in */
    if (gin[0].data) s = grad_a(g, dy, in[1].data, gin[0].data);
    if (s == D5_OK && gin[1].data) s = grad_b(g, in[0].data, dy, gin[1].data);
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const cmatmul *g = state;
    double b = (double)g->batch, m = (double)g->m, n = (double)g->n, k = (double)g->k;
    *flops = 2.0 * m * n * k * b;
    *bytes = 4.0 * ((g->a_full ? b : 1) * m * k + (g->b_full ? b : 1) * k * n + b * m * n);
}

/* clang-format off */
const d5_op_desc d5__op_cuda_MatMul = {
    D5_CUDA_OP("MatMul", D5_OP_HAS_BACKWARD, 2, 2, 1, 1), .create = create, .forward = forward,
    .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
