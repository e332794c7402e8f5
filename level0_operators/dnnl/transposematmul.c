/* TransposeMatMul (d5's operator of the graph pass fold-transpose-matmul,
 * ref/transposematmul.h) on oneDNN's matmul primitive, float32: the
 * transposed operands are never written out; oneDNN reads A and B through
 * strided memory descriptors (the dimensions of Transpose(A, perm_a), the
 * strides of A permuted alike), as an attention block's
 * MatMul(Transpose(Q, [0,2,1,3]), Transpose(K, [0,2,3,1])) reads Q and K in
 * the [B, S, H, D] layout of the projection that made them. Both operands
 * need rank 2 or more; batch dimensions broadcast. When oneDNN takes no such
 * descriptors, the operator is the dnnl Transpose then the dnnl MatMul. */
#include "mm.h"
#include "ref/transposematmul.h"

#include <string.h>

extern const d5_op_desc d5__op_dnnl_Transpose, d5__op_dnnl_MatMul;

typedef struct dtmm {
    d5_dnnl_impl impl; /* first: d5_op_impl_get reads it */
    d5_dnnl_ctx ctx;
    d5_dnnl_mm mm;
    void *composed; /* the fallback's state (d5__tmm_*) */
    double flops, bytes;
} dtmm;

static void destroy(void *state)
{
    dtmm *t = state;
    if (!t) return;
    if (t->composed) d5__tmm_destroy(t->composed);
    d5__dnnl_mm_free(&t->mm);
    d5__dnnl_ctx_free(&t->ctx);
    d5_free(t);
}

/* Operand k as the matmul sees it, padded to nd dimensions: dims and strides. */
static void operand(const d5_tensor_desc *x, const int64_t *perm, int nd, int64_t *dims,
                    int64_t *strides)
{
    int64_t xs[D5_MAX_DIMS], s = 1;
    for (int32_t i = x->ndim - 1; i >= 0; i--) {
        xs[i] = s;
        s *= x->shape[i];
    }
    int pad = nd - x->ndim;
    for (int d = 0; d < nd; d++) {
        int j = d - pad;
        int64_t axis = j < 0 ? -1 : perm ? perm[j] : j;
        dims[d] = axis < 0 ? 1 : x->shape[axis];
        strides[d] = axis < 0 ? s : xs[axis];
    }
}

static d5_status create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        d5_tensor_desc *out, int32_t nout, void **state)
{
    const char *name = "TransposeMatMul";
    if (nin != 2 || in[0].desc.dtype != D5_F32 || in[1].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): float32 A and B only", name);
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    const int64_t *pa = NULL, *pb = NULL;
    d5_status s = d5__tmm_perm(attrs, 0, a->ndim, &pa);
    if (s == D5_OK) s = d5__tmm_perm(attrs, 1, b->ndim, &pb);
    if (s != D5_OK) return s;
    if (a->ndim < 2 || b->ndim < 2)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): operands of rank 2 or more", name);
    d5_dnnl_mm_shape sh;
    memset(&sh, 0, sizeof sh);
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    sh.ndims = nd;
    operand(a, pa, nd, sh.a_dims, sh.a_strides);
    operand(b, pb, nd, sh.b_dims, sh.b_strides);
    if (sh.a_dims[nd - 1] != sh.b_dims[nd - 2])
        return d5_error(D5_ERR_SHAPE, "%s: inner dimensions differ (%lld vs %lld)", name,
                        (long long)sh.a_dims[nd - 1], (long long)sh.b_dims[nd - 2]);
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    out[0].ndim = nd;
    for (int d = 0; d < nd - 2; d++) {
        int64_t x = sh.a_dims[d], y = sh.b_dims[d];
        if (x != y && x != 1 && y != 1)
            return d5_error(D5_ERR_SHAPE,
                            "%s: batch dimension %d does not broadcast (%lld vs %lld)", name, d,
                            (long long)x, (long long)y);
        sh.c_dims[d] = out[0].shape[d] = x > y ? x : y;
    }
    sh.c_dims[nd - 2] = out[0].shape[nd - 2] = sh.a_dims[nd - 2];
    sh.c_dims[nd - 1] = out[0].shape[nd - 1] = sh.b_dims[nd - 1];
    sh.a_type = sh.b_type = sh.c_type = dnnl_f32;
    sh.alpha = 1.0f;
    dtmm *t = d5_calloc(1, sizeof *t, name);
    if (!t) return D5_ERR_NOMEM;
    t->flops = 2.0 * (double)d5_tensor_desc_numel(&out[0]) * (double)sh.a_dims[nd - 1];
    t->bytes = 4.0 * (double)(d5_tensor_desc_numel(a) + d5_tensor_desc_numel(b) +
                              d5_tensor_desc_numel(&out[0]));
    s = d5__dnnl_impl_init(&t->impl, attrs, D5_F32, name);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&t->ctx, name);
    if (s == D5_OK &&
        d5__dnnl_mm_create(&t->mm, &t->ctx, &sh, dnnl_f32, dnnl_fpmath_mode_strict,
                           t->impl.info.forward, sizeof t->impl.info.forward, name) != D5_OK) {
        /* No strided kernel: the two operators it replaces. */
        d5__dnnl_mm_free(&t->mm);
        memset(&t->mm, 0, sizeof t->mm);
        d5_tensor_desc shape[1];
        s = d5__tmm_create(&d5__op_dnnl_Transpose, &d5__op_dnnl_MatMul, in, nin, attrs, shape, nout,
                           &t->composed);
    }
    if (s != D5_OK) {
        destroy(t);
        return s;
    }
    *state = t;
    return D5_OK;
}

static d5_status forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                         int32_t nout)
{
    dtmm *t = state;
    if (t->composed) return d5__tmm_forward(t->composed, in, nin, out, nout);
    return d5__dnnl_mm_run(&t->mm, &t->ctx, in[0].data, in[1].data, out[0].data, "TransposeMatMul");
}

static void cost(void *state, double *flops, double *bytes)
{
    const dtmm *t = state;
    *flops = t->flops;
    *bytes = t->bytes;
}

const d5_op_desc d5__op_dnnl_TransposeMatMul = {
    D5_OP_ABI_VERSION, 0,    "TransposeMatMul", "dnnl", 2, 2, 1, 1, create,
    forward,           NULL, destroy,           cost};
