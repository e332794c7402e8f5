/* Gemm (ONNX opset 13) on oneDNN: Y = alpha A' B' + beta C.
 *
 * Float32 tensors run dnnl_sgemm (gemm_common.c). Bfloat16 and float16
 * tensors, and float32 tensors under a compute precision (D5_ATTR_PRECISION),
 * run oneDNN's matmul primitive (mm.c): transpositions are strides, alpha an
 * output scale, beta C a sum post-op over Y filled with C broadcast, float32
 * accumulation; backward is two more matmuls (dA, dB) and a sum over dY for
 * dC. Float16 has no CPU kernel in oneDNN 2.6: create declines.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html */
#include "../gemm_common.h"
#include "mm.h"

#include <stdio.h>
#include <string.h>

static void dnnl_sgemm_rowmajor(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float *a, int64_t lda, const float *b,
                                int64_t ldb, float beta, float *c, int64_t ldc)
{
    /* dnnl_sgemm is row-major; its status only reports bad arguments, which
     * create() has excluded. */
    (void)dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                     c, ldc);
}

typedef struct dgemm {
    d5_dnnl_impl impl; /* first: d5_op_impl_get reads it */
    void *sg;          /* the dnnl_sgemm path (gemm_common.c); NULL on the matmul path */
    d5_gemm_dims d;
    size_t esize; /* bytes per element of the tensors */
    d5_dnnl_ctx ctx;
    d5_dnnl_mm_shape fwd_shape;
    d5_dnnl_mm fwd, bwd_a, bwd_b; /* backward built on first use */
} dgemm;

static void destroy(void *state)
{
    dgemm *g = state;
    if (!g) return;
    if (g->sg) d5__gemm_destroy(g->sg);
    d5__dnnl_mm_free(&g->fwd);
    d5__dnnl_mm_free(&g->bwd_a);
    d5__dnnl_mm_free(&g->bwd_b);
    d5__dnnl_ctx_free(&g->ctx);
    d5_free(g);
}

/* The logical (rows x cols) view of a row-major matrix stored transposed or not. */
static void operand(d5_dnnl_mm_shape *sh, int which, int64_t rows, int64_t cols, int trans)
{
    dnnl_dim_t *dims = which ? sh->b_dims : sh->a_dims;
    dnnl_dim_t *strides = which ? sh->b_strides : sh->a_strides;
    dims[0] = rows;
    dims[1] = cols;
    strides[0] = trans ? 1 : cols;
    strides[1] = trans ? rows : 1;
}

/* C (m x n) = alpha op(A) op(B), all in the tensors' type. */
static d5_dnnl_mm_shape mm_shape(const dgemm *g, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 float beta)
{
    d5_dnnl_mm_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.ndims = 2;
    operand(&sh, 0, m, k, ta);
    operand(&sh, 1, k, n, tb);
    sh.c_dims[0] = m;
    sh.c_dims[1] = n;
    sh.a_type = sh.b_type = sh.c_type = g->impl.tensors;
    sh.alpha = g->d.alpha;
    sh.beta = beta;
    return sh;
}

static d5_status build_forward(void *self, dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                               dnnl_primitive_desc_t *pd)
{
    dgemm *g = self;
    return d5__dnnl_mm_desc(&g->ctx, &g->fwd_shape, compute, fpmath, pd, "Gemm");
}

/* Every float input has A's type. */
static d5_status check_types(const d5_tensor *in, int32_t nin)
{
    for (int32_t i = 0; i < nin && i < 3; i++) {
        int32_t d = in[i].desc.dtype;
        if (i < 2 && d == D5_DTYPE_INVALID)
            return d5_error(D5_ERR_INVALID, "Gemm (dnnl): input %d is required", (int)i);
        if (d != D5_DTYPE_INVALID && d != in[0].desc.dtype)
            return d5_error(D5_ERR_UNSUPPORTED, "Gemm (dnnl): input %d is %s but A is %s", (int)i,
                            d5_dtype_name((d5_dtype)d), d5_dtype_name((d5_dtype)in[0].desc.dtype));
    }
    return D5_OK;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = check_types(in, nin);
    if (s != D5_OK) return s;
    dgemm *g = d5_calloc(1, sizeof *g, "Gemm (dnnl)");
    if (!g) return D5_ERR_NOMEM;
    s = d5__dnnl_impl_init(&g->impl, attrs, in[0].desc.dtype, "Gemm");
    if (s == D5_OK) s = d5__gemm_dims(in, nin, attrs, &g->d);
    if (s == D5_OK && g->impl.tensors == dnnl_f32 && g->impl.asked == dnnl_data_type_undef) {
        /* Float32 as asked: dnnl_sgemm. */
        s = d5__gemm_create("dnnl", dnnl_sgemm_rowmajor, in, nin, attrs, out, &g->sg);
        snprintf(g->impl.info.precision, sizeof g->impl.info.precision, "f32");
        snprintf(g->impl.info.forward, sizeof g->impl.info.forward, "dnnl_sgemm");
        snprintf(g->impl.info.backward_data, sizeof g->impl.info.backward_data, "dnnl_sgemm");
        snprintf(g->impl.info.backward_weights, sizeof g->impl.info.backward_weights, "dnnl_sgemm");
        g->impl.info.support = D5_PRECISION_NATIVE;
        if (s != D5_OK) {
            destroy(g);
            return s;
        }
        *state = g;
        return D5_OK;
    }
    g->esize = d5_dtype_size((d5_dtype)in[0].desc.dtype);
    g->fwd_shape = mm_shape(g, g->d.ta, g->d.tb, g->d.m, g->d.n, g->d.k, g->d.cm ? g->d.beta : 0);
    g->fwd_shape.b_blocked = d5__dnnl_mm_blocked_b(g->d.m, in[1].data != NULL);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&g->ctx, "Gemm");
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_impl_choose(&g->impl, "matrix multiplication", "Gemm", build_forward, g, &pd);
    if (s == D5_OK) s = d5__dnnl_mm_init(&g->fwd, &g->ctx, &g->fwd_shape, pd, "Gemm");
    if (pd) dnnl_primitive_desc_destroy(pd);
    /* A constant B (a weight at inference) is converted into the primitive's
     * type and layout once. */
    if (s == D5_OK) s = d5__dnnl_arg_pack(&g->fwd.b, &g->ctx, in[1].data, "Gemm");
    if (s != D5_OK) {
        destroy(g);
        return s;
    }
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = in[0].desc.dtype;
    out[0].ndim = 2;
    out[0].shape[0] = g->d.m;
    out[0].shape[1] = g->d.n;
    *state = g;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dgemm *g = state;
    if (g->sg) return d5__gemm_forward(g->sg, call);
    const d5_gemm_dims *d = &g->d;
    if (d->cm) { /* Y = broadcast(C); the sum post-op adds beta Y */
        const unsigned char *c = in[2].data;
        unsigned char *y = out[0].data;
        for (int64_t i = 0; i < d->m; i++)
            for (int64_t j = 0; j < d->n; j++)
                memcpy(y + (size_t)(i * d->n + j) * g->esize,
                       c + (size_t)((d->cm == 1 ? 0 : i) * d->cn + (d->cn == 1 ? 0 : j)) * g->esize,
                       g->esize);
    }
    return d5__dnnl_mm_run(&g->fwd, &g->ctx, in[0].data, in[1].data, out[0].data, "Gemm");
}

/* dA = alpha dY B'^T (stored transposed when transA), dB = alpha A'^T dY, in
 * the forward's compute type (float32 where oneDNN lacks it, noted). */
static d5_status build_backward(dgemm *g)
{
    const d5_gemm_dims *d = &g->d;
    /* dA (k x m) = B' dY^T, or dA (m x k) = dY B'^T */
    d5_dnnl_mm_shape a = d->ta ? mm_shape(g, d->tb, 1, d->k, d->m, d->n, 0)
                               : mm_shape(g, 0, !d->tb, d->m, d->k, d->n, 0);
    /* dB (n x k) = dY^T A', or dB (k x n) = A'^T dY */
    d5_dnnl_mm_shape b = d->tb ? mm_shape(g, 1, d->ta, d->n, d->k, d->m, 0)
                               : mm_shape(g, !d->ta, 0, d->k, d->n, d->m, 0);
    return d5__dnnl_mm_backward_create(&g->bwd_a, &g->bwd_b, &g->ctx, &a, &b, &g->impl, "Gemm");
}

/* dC = beta times dY summed over the broadcast dimensions of C, in float32. */
static d5_status bias_gradient(dgemm *g, const void *dy, void *dc)
{
    const d5_gemm_dims *d = &g->d;
    int64_t ny = d->m * d->n, nc = d->cm * d->cn;
    float *y32 = NULL, *c32 = dc;
    d5_status s = D5_OK;
    if (g->impl.tensors != dnnl_f32) {
        y32 = d5_alloc((size_t)(ny + nc) * sizeof *y32, "Gemm bias gradient");
        if (!y32) return D5_ERR_NOMEM;
        c32 = y32 + ny;
        s = d5__dnnl_convert(&g->ctx, dy, g->impl.tensors, y32, dnnl_f32, ny, "Gemm");
        dy = y32;
    }
    const float *f = dy;
    memset(c32, 0, (size_t)nc * sizeof *c32);
    for (int64_t i = 0; s == D5_OK && i < d->m; i++)
        for (int64_t j = 0; j < d->n; j++)
            c32[(d->cm == 1 ? 0 : i) * d->cn + (d->cn == 1 ? 0 : j)] += d->beta * f[i * d->n + j];
    if (s == D5_OK && y32)
        s = d5__dnnl_convert(&g->ctx, c32, dnnl_f32, dc, g->impl.tensors, nc, "Gemm");
    d5_free(y32);
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    dgemm *g = state;
    if (g->sg) return d5__gemm_backward(g->sg, call);
    const d5_gemm_dims *d = &g->d;
    const void *dy = gout[0].data;
    d5_status s = g->bwd_a.prim ? D5_OK : build_backward(g);
    if (s == D5_OK && gin[0].data)
        s = d->ta ? d5__dnnl_mm_run(&g->bwd_a, &g->ctx, in[1].data, dy, gin[0].data, "Gemm")
                  : d5__dnnl_mm_run(&g->bwd_a, &g->ctx, dy, in[1].data, gin[0].data, "Gemm");
    if (s == D5_OK && gin[1].data)
        s = d->tb ? d5__dnnl_mm_run(&g->bwd_b, &g->ctx, dy, in[0].data, gin[1].data, "Gemm")
                  : d5__dnnl_mm_run(&g->bwd_b, &g->ctx, in[0].data, dy, gin[1].data, "Gemm");
    if (s == D5_OK && call->ninputs > 2 && d->cm && gin[2].data)
        s = bias_gradient(g, dy, gin[2].data);
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dgemm *g = state;
    if (g->sg) {
        d5__gemm_cost(g->sg, flops, bytes);
        return;
    }
    const d5_gemm_dims *d = &g->d;
    *flops = 2.0 * (double)d->m * (double)d->n * (double)d->k;
    *bytes = (double)g->esize * ((double)d->m * (double)d->k + (double)d->k * (double)d->n +
                                 (double)d->m * (double)d->n * (d->cm ? 2 : 1));
}

/* It reports its implementation (its state begins with a d5_op_impl). */
#define FLAGS (D5_OP_HAS_BACKWARD | D5_OP_REPORTS_IMPL)

/* clang-format off */
const d5_op_desc d5__op_dnnl_Gemm = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "Gemm", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
