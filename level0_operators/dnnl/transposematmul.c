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

/* Column panels of a large product: oneDNN 2.6's matmul ran a [128, 768] x
 * [768, 3072] product (a transformer's feed-forward layer) at 116 GFLOP/s on
 * a 2-core Intel Xeon with AVX-512, and its two [768, 1536] halves, written
 * into the same output, at 297; widths that are no power of two lost alike
 * (768: 285 -> 300 split, 1760, 2304, 2560, 3584, 5120, 6144, a 50,257-word
 * vocabulary), while powers of two gained or lost some 10% by the shape
 * (1024 x 256 x 1024: 315 -> 285). A product of at least PANEL_MIN_N columns,
 * no power of two, and of PANEL_MIN_FLOPS runs as PANELS primitives, one per
 * panel, each on its columns of B, Y and C. */
#define PANELS          2
#define PANEL_MIN_N     512
#define PANEL_MIN_FLOPS 8e6

typedef struct dtmm {
    d5_dnnl_ctx ctx;
    int parts; /* column panels, 1 or PANELS */
    dnnl_primitive_t prim[PANELS];
    dnnl_memory_t mem[PANELS][4]; /* A, B, Y, C of each panel */
    int64_t off[PANELS][4];       /* element offsets of each panel's operands */
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
    for (int q = 0; q < PANELS; q++) {
        for (int k = 0; k < 4; k++)
            if (t->mem[q][k]) dnnl_memory_destroy(t->mem[q][k]);
        if (t->prim[q]) dnnl_primitive_destroy(t->prim[q]);
    }
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

/* oneDNN's matmul of panel q on the strided operands (and the bias):
 * columns [n0, n0 + cd[nd - 1]) of B, Y and C, whose full width is n.
 * D5_ERR_UNSUPPORTED (or another error) when oneDNN has no kernel for them. */
static d5_status build(dtmm *t, int q, int nd, const dnnl_dims_t ad, const dnnl_dims_t as,
                       const dnnl_dims_t bd, const dnnl_dims_t bs, const dnnl_dims_t cd, int64_t n0,
                       int64_t n)
{
    const char *name = "TransposeMatMul";
    dnnl_memory_desc_t md[4];
    dnnl_dims_t full, cs, zd, zs;
    memcpy(full, cd, sizeof full);
    full[nd - 1] = n;
    dense(nd, full, cs);
    for (int d = 0; d < nd; d++) zd[d] = d == nd - 1 ? cd[d] : 1;
    dense(nd, zd, zs);
    t->off[q][0] = 0;
    t->off[q][1] = n0 * bs[nd - 1];
    t->off[q][2] = t->off[q][3] = n0;
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
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&t->prim[q], pd), name, "matmul");
    if (pd) dnnl_primitive_desc_destroy(pd);
    for (int k = 0; k < 4 && s == D5_OK; k++)
        s = d5__dnnl_check(
            dnnl_memory_create(&t->mem[q][k], &md[k], t->ctx.engine, DNNL_MEMORY_NONE), name,
            "memory");
    return s;
}

/* The whole product as t->parts panels of at least 64 columns. */
static d5_status build_panels(dtmm *t, int nd, const dnnl_dims_t ad, const dnnl_dims_t as,
                              const dnnl_dims_t bd, const dnnl_dims_t bs, const dnnl_dims_t cd)
{
    const int64_t n = cd[nd - 1];
    const int pow2 = (n & (n - 1)) == 0;
    t->parts = n >= PANEL_MIN_N && !pow2 && t->flops >= PANEL_MIN_FLOPS ? PANELS : 1;
    const int64_t width = (n + t->parts - 1) / t->parts;
    d5_status s = D5_OK;
    for (int q = 0; q < t->parts && s == D5_OK; q++) {
        const int64_t n0 = q * width, w = n - n0 < width ? n - n0 : width;
        dnnl_dims_t pb, pc;
        memcpy(pb, bd, sizeof pb);
        memcpy(pc, cd, sizeof pc);
        pb[nd - 1] = pc[nd - 1] = w;
        s = build(t, q, nd, ad, as, pb, bs, pc, n0, n);
    }
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
    if (s == D5_OK && (!direct || build_panels(t, nd, ad, as, bd, bs, cd) != D5_OK)) {
        for (int q = 0; q < PANELS; q++) {
            for (int k = 0; k < 4; k++)
                if (t->mem[q][k]) dnnl_memory_destroy(t->mem[q][k]);
            if (t->prim[q]) dnnl_primitive_destroy(t->prim[q]);
        }
        memset(t->mem, 0, sizeof t->mem);
        memset(t->prim, 0, sizeof t->prim);
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
    float *ptr[4] = {in[0].data, in[1].data, out[0].data, t->bias ? in[2].data : NULL};
    const int nargs = t->bias ? 4 : 3;
    d5_status s = D5_OK;
    for (int q = 0; q < t->parts && s == D5_OK; q++) {
        for (int k = 0; k < nargs && s == D5_OK; k++)
            s = d5__dnnl_check(dnnl_memory_set_data_handle(t->mem[q][k], ptr[k] + t->off[q][k]),
                               name, "memory");
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, t->mem[q][0]},
                                   {DNNL_ARG_WEIGHTS, t->mem[q][1]},
                                   {DNNL_ARG_DST, t->mem[q][2]},
                                   {DNNL_ARG_BIAS, t->mem[q][3]}};
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_primitive_execute(t->prim[q], t->ctx.stream, nargs, args), name,
                               "forward");
    }
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
