/* Gemm (ONNX opset 13) on cuBLAS, float32, device memory: Y = alpha A' B' +
 * beta C with A' = transA ? A^T : A and B' likewise; C may be a scalar, a row
 * (N) or (1, N), a column (M, 1) or a full (M, N) matrix.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html
 *
 * The attributes and shapes are checked by the code the blas and dnnl
 * backends share (gemm_common.c), so all backends accept the same inputs.
 * Row-major matrices go to cuBLAS's column-major sgemm as their transposes
 * (see d5__cuda_sgemm). Broadcasting C into Y, and summing dY back into the
 * shape of C, are rank-1 products with a vector of ones kept on the device,
 * so that no kernel of d5's own is needed:
 *   row C:    Y = 1_M c^T          dC = beta 1_M^T dY
 *   column C: Y = c 1_N^T          dC = beta dY 1_N
 *   scalar C: Y[0,:] = c 1_N^T, then rows 1.. = 1_(M-1) Y[0,:]
 *             dC = beta (1_M^T dY) 1_N
 *   full C:   a device-to-device copy; dC = beta dY by cublasSgeam.
 * cuBLAS's default math mode is kept: float32 arithmetic, no TF32, unless the
 * executor's compute precision is "tf32" (CUBLAS_TF32_TENSOR_OP_MATH). */
#include "../gemm_common.h"
#include "cuda_util.h"

typedef struct cgemm {
    cublasHandle_t h;
    int64_t m, n, k;
    int ta, tb;
    float alpha, beta;
    int64_t cm, cn; /* C seen as cm x cn (1 or M, 1 or N); 0: no C */
    float *ones;    /* device: max(M, N) ones, when C is given */
    float *row;     /* device: N floats, for the gradient of a scalar C */
} cgemm;

static const char *const OP = "Gemm";

static void destroy(void *state)
{
    cgemm *g = state;
    if (!g) return;
    d5__cuda_free(g->ones);
    d5__cuda_free(g->row);
    d5__cublas_free(g->h);
    d5_free(g);
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    /* Shape and attribute checks shared with the other backends. */
    void *common = NULL;
    d5_status s = d5__gemm_create("cuda", NULL, in, nin, attrs, out, &common);
    if (s != D5_OK) return s;
    d5__gemm_destroy(common);
    int64_t ta, tb;
    double alpha, beta;
    s = d5_attrs_int(attrs, "transA", 0, &ta);
    if (s == D5_OK) s = d5_attrs_int(attrs, "transB", 0, &tb);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "beta", 1.0, &beta);
    if (s != D5_OK) return s;
    cgemm *g = d5_calloc(1, sizeof *g, "Gemm (cuda)");
    if (!g) return D5_ERR_NOMEM;
    const d5_tensor_desc *a = &in[0].desc;
    g->m = out[0].shape[0];
    g->n = out[0].shape[1];
    g->k = ta ? a->shape[0] : a->shape[1];
    g->ta = ta != 0;
    g->tb = tb != 0;
    g->alpha = (float)alpha;
    g->beta = (float)beta;
    if (nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID) {
        const d5_tensor_desc *c = &in[2].desc;
        g->cm = c->ndim == 2 ? c->shape[0] : 1;
        g->cn = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
    }
    int dummy;
    if (g->m == 0 || g->n == 0 || g->k == 0)
        s = d5_error(D5_ERR_UNSUPPORTED, "Gemm (cuda): empty matrices (M %lld, N %lld, K %lld)",
                     (long long)g->m, (long long)g->n, (long long)g->k);
    if (s == D5_OK) s = d5__cuda_int(g->m * g->n, OP, "M * N", &dummy);
    if (s == D5_OK) s = d5__cuda_int(g->m * g->k, OP, "M * K", &dummy);
    if (s == D5_OK) s = d5__cuda_int(g->k * g->n, OP, "K * N", &dummy);
    int tf32 = 0;
    if (s == D5_OK) s = d5__cuda_precision(attrs, OP, &tf32);
    if (s == D5_OK) s = d5__cublas_create(&g->h, OP);
    if (s == D5_OK && tf32)
        s = d5__cublas_check(cublasSetMathMode(g->h, CUBLAS_TF32_TENSOR_OP_MATH), OP,
                             "cublasSetMathMode (TF32)");
    if (s == D5_OK && g->cm)
        s = d5__cuda_fill(&g->ones, g->m > g->n ? g->m : g->n, 1.0f, OP, "vector of ones");
    if (s == D5_OK && g->cm == 1 && g->cn == 1)
        s = d5__cuda_malloc((void **)&g->row, (size_t)g->n * sizeof(float), OP, "row sums");
    return d5__cuda_created(s, g, destroy, state);
}

/* Y = broadcast(C). */
static d5_status broadcast_c(const cgemm *g, const float *c, float *y)
{
    int64_t m = g->m, n = g->n;
    if (g->cm == m && g->cn == n)
        return d5__cuda_check(
            cudaMemcpyAsync(y, c, (size_t)(m * n) * sizeof *y, cudaMemcpyDeviceToDevice, 0), OP,
            "cudaMemcpyAsync of C");
    if (g->cm == 1 && g->cn == n) /* row */
        return d5__cuda_sgemm(g->h, OP, 0, 0, m, n, 1, 1.0f, g->ones, 1, c, n, 0.0f, y, n);
    if (g->cn == 1 && g->cm == m) /* column */
        return d5__cuda_sgemm(g->h, OP, 0, 0, m, n, 1, 1.0f, c, 1, g->ones, n, 0.0f, y, n);
    /* scalar: the first row, then the others from it */
    d5_status s = d5__cuda_sgemm(g->h, OP, 0, 0, 1, n, 1, 1.0f, c, 1, g->ones, n, 0.0f, y, n);
    if (s == D5_OK && m > 1)
        s = d5__cuda_sgemm(g->h, OP, 0, 0, m - 1, n, 1, 1.0f, g->ones, 1, y, n, 0.0f, y + n, n);
    return s;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const cgemm *g = state;
    d5_status s = d5__cuda_call_on_device(OP, call);
    float beta = 0.0f;
    if (s == D5_OK && g->cm) {
        s = broadcast_c(g, in[2].data, out[0].data);
        beta = g->beta;
    }
    if (s == D5_OK)
        s = d5__cuda_sgemm(g->h, OP, g->ta, g->tb, g->m, g->n, g->k, g->alpha, in[0].data,
                           g->ta ? g->m : g->k, in[1].data, g->tb ? g->k : g->n, beta, out[0].data,
                           g->n);
    return s;
}

/* dC = beta * (dY summed over the broadcast axes). */
static d5_status grad_c(const cgemm *g, const float *dy, float *dc)
{
    int64_t m = g->m, n = g->n;
    if (g->cm == m && g->cn == n) {
        float zero = 0.0f;
        int rows = (int)m, cols = (int)n; /* checked at create */
        return d5__cublas_check(cublasSgeam(g->h, CUBLAS_OP_N, CUBLAS_OP_N, cols, rows, &g->beta,
                                            dy, cols, &zero, dy, cols, dc, cols),
                                OP, "cublasSgeam");
    }
    if (g->cm == 1 && g->cn == n) /* row: dc (1 x n) = beta 1^T dY */
        return d5__cuda_sgemm(g->h, OP, 0, 0, 1, n, m, g->beta, g->ones, m, dy, n, 0.0f, dc, n);
    if (g->cn == 1 && g->cm == m) /* column: dc (m x 1) = beta dY 1 */
        return d5__cuda_sgemm(g->h, OP, 0, 0, m, 1, n, g->beta, dy, n, g->ones, 1, 0.0f, dc, 1);
    d5_status s = d5__cuda_sgemm(g->h, OP, 0, 0, 1, n, m, 1.0f, g->ones, m, dy, n, 0.0f, g->row, n);
    if (s == D5_OK)
        s = d5__cuda_sgemm(g->h, OP, 0, 0, 1, 1, n, g->beta, g->row, n, g->ones, 1, 0.0f, dc, 1);
    return s;
}

/* dA = alpha dY B'^T (stored transposed when transA), dB = alpha A'^T dY, as
 * in gemm_common.c. */
static d5_status backward(void *state, const d5_op_call *call)
{
    const cgemm *g = state;
    d5_tensor *gin = call->grad_inputs;
    d5_status s = d5__cuda_call_on_device(OP, call);
    if (s != D5_OK) return s;
    const float *dy = call->grad_outputs[0].data, *a = call->inputs[0].data,
                *b = call->inputs[1].data;
    int64_t m = g->m, n = g->n, k = g->k, lda = g->ta ? m : k, ldb = g->tb ? k : n;
    int want_c = call->ninputs > 2 && g->cm && gin[2].data;
    if (!dy) { /* no gradient flows in */
        if (gin[0].data) s = d5__cuda_zero(gin[0].data, m * k, OP);
        if (s == D5_OK && gin[1].data) s = d5__cuda_zero(gin[1].data, k * n, OP);
        if (s == D5_OK && want_c) s = d5__cuda_zero(gin[2].data, g->cm * g->cn, OP);
        return s;
    }
    if (gin[0].data) {
        if (g->ta) /* dA (k x m) = alpha B' dY^T */
            s = d5__cuda_sgemm(g->h, OP, g->tb, 1, k, m, n, g->alpha, b, ldb, dy, n, 0.0f,
                               gin[0].data, m);
        else /* dA (m x k) = alpha dY B'^T */
            s = d5__cuda_sgemm(g->h, OP, 0, !g->tb, m, k, n, g->alpha, dy, n, b, ldb, 0.0f,
                               gin[0].data, k);
    }
    if (s == D5_OK && gin[1].data) {
        if (g->tb) /* dB (n x k) = alpha dY^T A' */
            s = d5__cuda_sgemm(g->h, OP, 1, g->ta, n, k, m, g->alpha, dy, n, a, lda, 0.0f,
                               gin[1].data, k);
        else /* dB (k x n) = alpha A'^T dY */
            s = d5__cuda_sgemm(g->h, OP, !g->ta, 0, k, n, m, g->alpha, a, lda, dy, n, 0.0f,
                               gin[1].data, n);
    }
    if (s == D5_OK && want_c) s = grad_c(g, dy, gin[2].data);
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const cgemm *g = state;
    *flops = 2.0 * (double)g->m * (double)g->n * (double)g->k;
    *bytes = 4.0 * ((double)g->m * (double)g->k + (double)g->k * (double)g->n +
                    (double)g->m * (double)g->n * (g->cm ? 2 : 1));
}

/* clang-format off */
const d5_op_desc d5__op_cuda_Gemm = {
    D5_CUDA_OP("Gemm", D5_OP_HAS_BACKWARD, 2, 3, 1, 1), .create = create, .forward = forward,
    .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
