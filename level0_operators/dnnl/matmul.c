/* MatMul (ONNX opset 13) on oneDNN's matmul primitive: numpy semantics, 1-d
 * operands promoted, batch dimensions broadcast; float32, bfloat16 or float16
 * tensors (float16 has no CPU kernel in oneDNN 2.6: create declines), float32
 * under a compute precision converted to it (precision.c), float32
 * accumulation. Backward is two more matmuls, dA = dY B^T and dB = A^T dY; the
 * gradient of an operand broadcast over batch dimensions is summed over them,
 * as one flat product for a 2-d B (the usual weight), else in float32 from a
 * product over the whole batch.
 * https://onnx.ai/onnx/operators/onnx__MatMul.html */
#include "mm.h"

#include <stdio.h>
#include <string.h>

/* How the gradient of an operand is formed. */
enum { DIRECT = 0, FLAT = 1, SCRATCH = 2 };

typedef struct dmatmul {
    d5_dnnl_impl impl; /* first: d5_op_impl_get reads it */
    d5_dnnl_ctx ctx;
    int nb;          /* batch dims of the output */
    int64_t m, n, k; /* the matrices: A (m x k), B (k x n) */
    int64_t a_batch[D5_MAX_DIMS], b_batch[D5_MAX_DIMS], out_batch[D5_MAX_DIMS]; /* 1: broadcast */
    int64_t batch; /* output matrices */
    size_t esize;
    d5_dnnl_mm_shape fwd_shape;
    d5_dnnl_mm fwd, da, db; /* backward built on first use */
    int da_mode, db_mode;
} dmatmul;

static void destroy(void *state)
{
    dmatmul *g = state;
    if (!g) return;
    d5__dnnl_mm_free(&g->fwd);
    d5__dnnl_mm_free(&g->da);
    d5__dnnl_mm_free(&g->db);
    d5__dnnl_ctx_free(&g->ctx);
    d5_free(g);
}

/* Sizes, broadcasting and the output descriptor (the rules of blas/matmul.c). */
static d5_status shapes(dmatmul *g, const d5_tensor_desc *a, const d5_tensor_desc *b,
                        d5_tensor_desc *y)
{
    if (a->ndim < 1 || b->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "MatMul: operands must have at least 1 dimension");
    int64_t ak = a->shape[a->ndim - 1], bk = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ak != bk)
        return d5_error(D5_ERR_SHAPE, "MatMul: inner dimensions differ (%lld vs %lld)",
                        (long long)ak, (long long)bk);
    g->m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    g->n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    g->k = ak;
    int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
    g->nb = abat > bbat ? abat : bbat;
    g->batch = 1;
    for (int d = 0; d < g->nb; d++) {
        int ja = d - (g->nb - abat), jb = d - (g->nb - bbat);
        int64_t sa = ja >= 0 ? a->shape[ja] : 1, sb = jb >= 0 ? b->shape[jb] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return d5_error(D5_ERR_SHAPE,
                            "MatMul: batch dimension %d does not broadcast (%lld vs %lld)", d,
                            (long long)sa, (long long)sb);
        g->a_batch[d] = sa;
        g->b_batch[d] = sb;
        g->out_batch[d] = sa > sb ? sa : sb;
        g->batch *= g->out_batch[d];
    }
    memset(y, 0, sizeof *y);
    y->dtype = a->dtype;
    for (int d = 0; d < g->nb; d++) y->shape[y->ndim++] = g->out_batch[d];
    if (a->ndim > 1) y->shape[y->ndim++] = g->m;
    if (b->ndim > 1) y->shape[y->ndim++] = g->n;
    return D5_OK;
}

/* A matrix product over the batch: (rows x inner) by (inner x cols), the
 * operands of batch sizes xb and wb, dense unless transposed (x_t, w_t: the
 * operand is stored (inner x rows) or (cols x inner)). */
static d5_dnnl_mm_shape batched(const dmatmul *g, const int64_t *xb, int64_t rows, int64_t inner,
                                int x_t, const int64_t *wb, int64_t cols, int w_t,
                                dnnl_data_type_t c_type)
{
    d5_dnnl_mm_shape sh;
    memset(&sh, 0, sizeof sh);
    int nd = g->nb + 2;
    sh.ndims = nd;
    for (int d = 0; d < g->nb; d++) {
        sh.a_dims[d] = xb[d];
        sh.b_dims[d] = wb[d];
        sh.c_dims[d] = g->out_batch[d];
    }
    sh.a_dims[nd - 2] = rows;
    sh.a_dims[nd - 1] = inner;
    sh.b_dims[nd - 2] = inner;
    sh.b_dims[nd - 1] = cols;
    sh.c_dims[nd - 2] = rows;
    sh.c_dims[nd - 1] = cols;
    d5__dnnl_dense_strides(nd, sh.a_dims, sh.a_strides);
    d5__dnnl_dense_strides(nd, sh.b_dims, sh.b_strides);
    if (x_t) { /* stored (inner x rows) */
        sh.a_strides[nd - 2] = 1;
        sh.a_strides[nd - 1] = rows;
    }
    if (w_t) { /* stored (cols x inner) */
        sh.b_strides[nd - 2] = 1;
        sh.b_strides[nd - 1] = inner;
    }
    sh.a_type = sh.b_type = g->impl.tensors;
    sh.c_type = c_type;
    sh.alpha = 1.0f;
    return sh;
}

/* Rows of the output that each B matrix meets: m, times A's batch where B
 * is one matrix broadcast over it. */
static int64_t rows_per_b(const dmatmul *g)
{
    int64_t rows = g->m;
    for (int d = 0; d < g->nb; d++)
        if (g->b_batch[d] == 1) rows *= g->a_batch[d];
    return rows;
}

static d5_status build_forward(void *self, dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                               dnnl_primitive_desc_t *pd)
{
    dmatmul *g = self;
    return d5__dnnl_mm_desc(&g->ctx, &g->fwd_shape, compute, fpmath, pd, "MatMul");
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (in[1].desc.dtype != in[0].desc.dtype)
        return d5_error(D5_ERR_UNSUPPORTED, "MatMul (dnnl): B is %s but A is %s",
                        d5_dtype_name((d5_dtype)in[1].desc.dtype),
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    dmatmul *g = d5_calloc(1, sizeof *g, "MatMul (dnnl)");
    if (!g) return D5_ERR_NOMEM;
    d5_status s = d5__dnnl_impl_init(&g->impl, attrs, in[0].desc.dtype, "MatMul");
    if (s == D5_OK) s = shapes(g, &in[0].desc, &in[1].desc, &out[0]);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&g->ctx, "MatMul");
    g->esize = d5_dtype_size((d5_dtype)in[0].desc.dtype);
    g->fwd_shape = batched(g, g->a_batch, g->m, g->k, 0, g->b_batch, g->n, 0, g->impl.tensors);
    g->fwd_shape.b_blocked = d5__dnnl_mm_blocked_b(rows_per_b(g), in[1].data != NULL);
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_impl_choose(&g->impl, "matrix multiplication", "MatMul", build_forward, g,
                                 &pd);
    if (s == D5_OK) s = d5__dnnl_mm_init(&g->fwd, &g->ctx, &g->fwd_shape, pd, "MatMul");
    if (pd) dnnl_primitive_desc_destroy(pd);
    /* A constant B (a weight at inference) is converted into the primitive's
     * type and layout once. */
    if (s == D5_OK) s = d5__dnnl_arg_pack(&g->fwd.b, &g->ctx, in[1].data, "MatMul");
    if (s != D5_OK) {
        destroy(g);
        return s;
    }
    *state = g;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dmatmul *g = state;
    return d5__dnnl_mm_run(&g->fwd, &g->ctx, in[0].data, in[1].data, out[0].data, "MatMul");
}

static int same_batch(const dmatmul *g, const int64_t *b)
{
    for (int d = 0; d < g->nb; d++)
        if (b[d] != g->out_batch[d]) return 0;
    return 1;
}

static int no_batch(const dmatmul *g, const int64_t *b)
{
    for (int d = 0; d < g->nb; d++)
        if (b[d] != 1) return 0;
    return 1;
}

static d5_status build_backward(dmatmul *g)
{
    dnnl_data_type_t t = g->impl.tensors;
    g->da_mode = same_batch(g, g->a_batch) ? DIRECT : SCRATCH;
    g->db_mode = same_batch(g, g->b_batch)                              ? DIRECT
                 : no_batch(g, g->b_batch) && same_batch(g, g->a_batch) ? FLAT
                                                                        : SCRATCH;
    /* dA (m x k) = dY (m x n) B^T (n x k) */
    d5_dnnl_mm_shape a = batched(g, g->out_batch, g->m, g->n, 0, g->b_batch, g->k, 1,
                                 g->da_mode == DIRECT ? t : dnnl_f32);
    /* dB (k x n) = A^T (k x m) dY (m x n) */
    d5_dnnl_mm_shape b = batched(g, g->a_batch, g->k, g->m, 1, g->out_batch, g->n, 0,
                                 g->db_mode == DIRECT ? t : dnnl_f32);
    if (g->db_mode == FLAT) { /* A as (batch m x k), dY as (batch m x n): one 2-d product */
        memset(&b, 0, sizeof b);
        b.ndims = 2;
        b.a_dims[0] = b.c_dims[0] = g->k;
        b.a_dims[1] = b.b_dims[0] = g->batch * g->m;
        b.b_dims[1] = b.c_dims[1] = g->n;
        b.a_strides[0] = 1;
        b.a_strides[1] = g->k;
        b.b_strides[0] = g->n;
        b.b_strides[1] = 1;
        b.a_type = b.b_type = b.c_type = t;
        b.alpha = 1.0f;
    }
    return d5__dnnl_mm_backward_create(&g->da, &g->db, &g->ctx, &a, &b, &g->impl, "MatMul");
}

/* Matrix offset of output batch index bi in an operand of batch sizes `ob`. */
static int64_t batch_offset(const dmatmul *g, const int64_t *ob, int64_t bi)
{
    int64_t off = 0, stride = 1;
    for (int d = g->nb - 1; d >= 0; d--) {
        int64_t i = bi % g->out_batch[d];
        bi /= g->out_batch[d];
        if (ob[d] != 1) off += i * stride;
        stride *= ob[d];
    }
    return off;
}

/* The gradient of an operand broadcast over batch dimensions: the product over
 * the whole batch into float32 scratch, summed into the operand's shape. */
static d5_status scratch_gradient(dmatmul *g, d5_dnnl_mm *mm, const void *x, const void *w,
                                  const int64_t *ob, int64_t rows, int64_t cols, void *grad)
{
    int64_t mat = rows * cols, nob = 1;
    for (int d = 0; d < g->nb; d++) nob *= ob[d];
    int convert = g->impl.tensors != dnnl_f32;
    float *full = d5_alloc((size_t)(g->batch + (convert ? nob : 0)) * (size_t)mat * sizeof *full,
                           "MatMul gradient");
    if (!full) return D5_ERR_NOMEM;
    float *sum = convert ? full + g->batch * mat : grad;
    d5_status s = d5__dnnl_mm_run(mm, &g->ctx, x, w, full, "MatMul");
    if (s == D5_OK) {
        memset(sum, 0, (size_t)(nob * mat) * sizeof *sum);
        for (int64_t bi = 0; bi < g->batch; bi++) {
            float *dst = sum + batch_offset(g, ob, bi) * mat;
            const float *src = full + bi * mat;
            for (int64_t e = 0; e < mat; e++) dst[e] += src[e];
        }
    }
    if (s == D5_OK && convert)
        s = d5__dnnl_convert(&g->ctx, sum, dnnl_f32, grad, g->impl.tensors, nob * mat, "MatMul");
    d5_free(full);
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    dmatmul *g = state;
    const void *dy = gout[0].data;
    d5_status s = g->da.prim ? D5_OK : build_backward(g);
    if (s == D5_OK && gin[0].data)
        s = g->da_mode == DIRECT
                ? d5__dnnl_mm_run(&g->da, &g->ctx, dy, in[1].data, gin[0].data, "MatMul")
                : scratch_gradient(g, &g->da, dy, in[1].data, g->a_batch, g->m, g->k, gin[0].data);
    if (s == D5_OK && gin[1].data)
        s = g->db_mode != SCRATCH
                ? d5__dnnl_mm_run(&g->db, &g->ctx, in[0].data, dy, gin[1].data, "MatMul")
                : scratch_gradient(g, &g->db, in[0].data, dy, g->b_batch, g->k, g->n, gin[1].data);
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dmatmul *g = state;
    *flops = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
    *bytes =
        (double)g->esize * (double)g->batch *
        ((double)g->m * (double)g->k + (double)g->k * (double)g->n + (double)g->m * (double)g->n);
}

/* It reports its implementation (its state begins with a d5_op_impl). */
#define FLAGS (D5_OP_HAS_BACKWARD | D5_OP_REPORTS_IMPL)

/* clang-format off */
const d5_op_desc d5__op_dnnl_MatMul = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "MatMul", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
