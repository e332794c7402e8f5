/* TransposeMatMul (d5's operator of the graph passes fold-transpose-matmul,
 * fuse-matmul-scale and fuse-matmul-bias, ref/transposematmul.h) on oneDNN's
 * matmul primitive, float32, alpha as its output scale, C as its bias when it
 * holds one value per column (a Linear layer's bias, added while the output
 * is in cache): the
 * transposed operands are never written out; oneDNN reads A and B through
 * strided memory descriptors (the dimensions of Transpose(A, perm_a), the
 * strides of A permuted alike), as an attention block's
 * MatMul(Transpose(Q, [0,2,1,3]), Transpose(K, [0,2,3,1])) reads Q and K in
 * the [B, S, H, D] layout of the projection that made them. Both operands
 * need rank 2 or more; batch dimensions broadcast. When oneDNN takes no such
 * descriptors, or C is another shape, the operator is the dnnl Transpose,
 * MatMul and Add one after the other. */
#include "dnnl_util.h"
#include "ref/transposematmul.h"

#include <string.h>

extern const d5_op_desc d5__op_dnnl_Transpose, d5__op_dnnl_MatMul, d5__op_dnnl_Add;

typedef struct dtmm {
    d5_dnnl_ctx ctx;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[4]; /* A, B, Y, C */
    int bias;
    float alpha;
    void *composed; /* the fallback's state (d5__tmm_*) */
    double flops, bytes;
} dtmm;

static void destroy(void *state)
{
    dtmm *t = state;
    if (!t) return;
    if (t->composed) d5__tmm_destroy(t->composed);
    for (int k = 0; k < 4; k++)
        if (t->mem[k]) dnnl_memory_destroy(t->mem[k]);
    if (t->prim) dnnl_primitive_destroy(t->prim);
    d5__dnnl_ctx_free(&t->ctx);
    d5_free(t);
}

/* Operand k as the matmul sees it, padded to nd dimensions: dims and strides. */
static void operand(const d5_tensor_desc *x, const int64_t *perm, int nd, dnnl_dims_t dims,
                    dnnl_dims_t strides)
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

static void dense(int nd, const dnnl_dims_t dims, dnnl_dims_t strides)
{
    dnnl_dim_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

/* oneDNN's matmul on the strided operands (and the bias); D5_ERR_UNSUPPORTED
 * (or another error) when oneDNN has no kernel for them. */
static d5_status build(dtmm *t, int nd, const dnnl_dims_t ad, const dnnl_dims_t as,
                       const dnnl_dims_t bd, const dnnl_dims_t bs, const dnnl_dims_t cd)
{
    const char *name = "TransposeMatMul";
    dnnl_memory_desc_t md[4];
    dnnl_dims_t cs, zd, zs;
    dense(nd, cd, cs);
    for (int d = 0; d < nd; d++) zd[d] = d == nd - 1 ? cd[d] : 1;
    dense(nd, zd, zs);
    d5_status s =
        d5__dnnl_check(dnnl_memory_desc_init_by_strides(&md[0], nd, ad, dnnl_f32, as), name, "A");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_desc_init_by_strides(&md[1], nd, bd, dnnl_f32, bs), name,
                           "B");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_desc_init_by_strides(&md[2], nd, cd, dnnl_f32, cs), name,
                           "Y");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_desc_init_by_strides(&md[3], nd, zd, dnnl_f32, zs), name,
                           "C");
    dnnl_matmul_desc_t mmd;
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_matmul_desc_init(&mmd, &md[0], &md[1], t->bias ? &md[3] : NULL, &md[2]), name,
            "matmul descriptor");
    dnnl_primitive_attr_t attr = NULL;
    if (s == D5_OK && t->alpha != 1.0f) {
        s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), name, "attributes");
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &t->alpha), name,
                               "output scale");
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &mmd, attr, t->ctx.engine, NULL), name,
                           "matmul primitive descriptor");
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&t->prim, pd), name, "matmul");
    if (pd) dnnl_primitive_desc_destroy(pd);
    for (int k = 0; k < 4 && s == D5_OK; k++)
        s = d5__dnnl_check(dnnl_memory_create(&t->mem[k], &md[k], t->ctx.engine, DNNL_MEMORY_NONE),
                           name, "memory");
    return s;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *name = "TransposeMatMul";
    int bias = nin > 2 && in[2].desc.dtype != D5_DTYPE_INVALID;
    if (nin < 2 || in[0].desc.dtype != D5_F32 || in[1].desc.dtype != D5_F32 ||
        (bias && in[2].desc.dtype != D5_F32))
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): float32 A, B and C only", name);
    const d5_tensor_desc *a = &in[0].desc, *b = &in[1].desc;
    const int64_t *pa = NULL, *pb = NULL;
    d5_status s = d5__tmm_perm(attrs, 0, a->ndim, &pa);
    if (s == D5_OK) s = d5__tmm_perm(attrs, 1, b->ndim, &pb);
    if (s != D5_OK) return s;
    if (a->ndim < 2 || b->ndim < 2)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): operands of rank 2 or more", name);
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    dnnl_dims_t ad, as, bd, bs, cd;
    operand(a, pa, nd, ad, as);
    operand(b, pb, nd, bd, bs);
    if (ad[nd - 1] != bd[nd - 2])
        return d5_error(D5_ERR_SHAPE, "%s: inner dimensions differ (%lld vs %lld)", name,
                        (long long)ad[nd - 1], (long long)bd[nd - 2]);
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    out[0].ndim = nd;
    for (int d = 0; d < nd - 2; d++) {
        int64_t x = ad[d], y = bd[d];
        if (x != y && x != 1 && y != 1)
            return d5_error(D5_ERR_SHAPE,
                            "%s: batch dimension %d does not broadcast (%lld vs %lld)", name, d,
                            (long long)x, (long long)y);
        cd[d] = out[0].shape[d] = x > y ? x : y;
    }
    cd[nd - 2] = out[0].shape[nd - 2] = ad[nd - 2];
    cd[nd - 1] = out[0].shape[nd - 1] = bd[nd - 1];
    dtmm *t = d5_calloc(1, sizeof *t, name);
    if (!t) return D5_ERR_NOMEM;
    t->bias = bias;
    double alpha = 1.0;
    s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s != D5_OK) {
        d5_free(t);
        return s;
    }
    t->alpha = (float)alpha;
    t->flops = 2.0 * (double)d5_tensor_desc_numel(&out[0]) * (double)ad[nd - 1];
    t->bytes = 4.0 * (double)(d5_tensor_desc_numel(a) + d5_tensor_desc_numel(b) +
                              d5_tensor_desc_numel(&out[0]));
    s = d5__dnnl_ctx_create(&t->ctx, name);
    /* oneDNN's bias is one value per column, and added after the output
     * scale only in some versions: another C, or a C with alpha, runs composed. */
    int direct = !bias || (d5_tensor_desc_numel(&in[2].desc) == cd[nd - 1] && alpha == 1.0);
    if (s == D5_OK && (!direct || build(t, nd, ad, as, bd, bs, cd) != D5_OK)) {
        for (int k = 0; k < 4; k++)
            if (t->mem[k]) dnnl_memory_destroy(t->mem[k]);
        if (t->prim) dnnl_primitive_destroy(t->prim);
        memset(t->mem, 0, sizeof t->mem);
        t->prim = NULL;
        d5_tensor_desc shape[1];
        s = d5__tmm_create(&d5__op_dnnl_Transpose, &d5__op_dnnl_MatMul, &d5__op_dnnl_Add, in, nin,
                           attrs, shape, &t->composed);
    }
    if (s != D5_OK) {
        destroy(t);
        return s;
    }
    *state = t;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dtmm *t = state;
    if (t->composed) return d5__tmm_forward(t->composed, call);
    const char *name = "TransposeMatMul";
    void *ptr[4] = {in[0].data, in[1].data, out[0].data, t->bias ? in[2].data : NULL};
    d5_status s = D5_OK;
    for (int k = 0; k < (t->bias ? 4 : 3) && s == D5_OK; k++)
        s = d5__dnnl_check(dnnl_memory_set_data_handle(t->mem[k], ptr[k]), name, "memory");
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, t->mem[0]},
                               {DNNL_ARG_WEIGHTS, t->mem[1]},
                               {DNNL_ARG_DST, t->mem[2]},
                               {DNNL_ARG_BIAS, t->mem[3]}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(t->prim, t->ctx.stream, t->bias ? 4 : 3, args),
                           name, "forward");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(t->ctx.stream), name, "stream");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dtmm *t = state;
    *flops = t->flops;
    *bytes = t->bytes;
}

/* clang-format off */
const d5_op_desc d5__op_dnnl_TransposeMatMul = {
    .abi_version = D5_OP_ABI_VERSION, .flags = 0, .name = "TransposeMatMul", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */
