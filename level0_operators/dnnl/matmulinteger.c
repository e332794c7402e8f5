/* MatMulInteger and QLinearMatMul (ONNX opset 10) on oneDNN's matmul
 * primitive: uint8 or int8 A times int8 weights, int32 accumulation, numpy
 * matmul broadcasting of the batch dimensions.
 *
 * ONNX's zero points become oneDNN's: A's as the source zero point, B's as
 * the weights zero point (one per tensor), y's as the destination zero point.
 * oneDNN's int8 kernels take int8 weights, so uint8 B is flipped into int8
 * (w - 128) and its zero point lowered by 128, which leaves (w - zp)
 * unchanged. A zero point of B per column is folded into B when B is known at
 * create and every w - zp fits int8; otherwise, and for a zero point of A per
 * row, the operator declines (D5_ERR_UNSUPPORTED) and the executor runs ref.
 *
 * QLinearMatMul's output is saturate(round(acc * a_scale * b_scale / y_scale)
 * + y_zero_point), the scale per tensor or per column of B (oneDNN's output
 * scales), rounded half to even. oneDNN adds the destination zero point before
 * its final rounding, so a round post-op rounds first, as ONNX does. oneDNN
 * scales the int32 accumulator in float32; ONNX's reference in float64: the two
 * can differ by 1 where the scaled value lies within a float32 rounding of a
 * half-integer (docs/level0.md, "int8 operators").
 *
 * Scales and zero points known at create are compiled into the primitive;
 * others are passed at each call (oneDNN's run-time arguments), which some
 * ISAs serve with a slower kernel (gemm:jit instead of brg).
 * https://onnx.ai/onnx/operators/onnx__MatMulInteger.html
 * https://onnx.ai/onnx/operators/onnx__QLinearMatMul.html */
#include "int8.h"

#include <string.h>

enum { MAXD = D5_MAX_DIMS };

typedef struct dmm {
    d5_int8_head head; /* first: d5_op_impl_get reads it */
    const char *op;
    int qlinear;
    d5_dnnl_ctx ctx;
    dnnl_primitive_t prim;
    d5_dnnl_arg a, b, y;
    int ia, ib, ia_zp, ib_zp, ia_s, ib_s, iy_s, iy_zp; /* input slots; -1: none */
    int b_flip;    /* B is uint8, flipped into b8 at each call */
    int b_packed;  /* B known at create: b8 holds it as int8, packed */
    int zp_folded; /* B's zero point is subtracted in b8 */
    int8_t *b8;    /* B as int8 */
    int64_t nb;    /* elements of B */
    int wei_shift; /* added to B's zero point: -128 for flipped B */
    int rt_src, rt_wei, rt_dst, rt_scales;
    dnnl_memory_t m_src_zp, m_wei_zp, m_dst_zp, m_scales;
    int32_t v_src_zp, v_wei_zp, v_dst_zp;
    float *v_scales; /* run-time scales: one, or one per column */
    int64_t nscales;
    double flops, bytes;
} dmm;

static void destroy(void *state)
{
    dmm *c = state;
    if (!c) return;
    d5__dnnl_arg_free(&c->a);
    d5__dnnl_arg_free(&c->b);
    d5__dnnl_arg_free(&c->y);
    dnnl_memory_t mems[] = {c->m_src_zp, c->m_wei_zp, c->m_dst_zp, c->m_scales};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (c->prim) dnnl_primitive_destroy(c->prim);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c->b8);
    d5_free(c->v_scales);
    d5_free(c);
}

/* numpy matmul shapes: A (..., M, K) or (K), B (..., K, N) or (K); the batch
 * dimensions broadcast. Fills the padded oneDNN dims and the output desc. */
static d5_status shapes(const char *op, const d5_tensor_desc *A, const d5_tensor_desc *B, int *nd,
                        int64_t *ad, int64_t *bd, int64_t *yd, d5_tensor_desc *out, int64_t *m,
                        int64_t *k, int64_t *n)
{
    if (A->ndim < 1 || B->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "%s: A and B need at least one dimension", op);
    int64_t ka = A->shape[A->ndim - 1], kb = B->ndim == 1 ? B->shape[0] : B->shape[B->ndim - 2];
    *m = A->ndim == 1 ? 1 : A->shape[A->ndim - 2];
    *n = B->ndim == 1 ? 1 : B->shape[B->ndim - 1];
    *k = ka;
    if (ka != kb)
        return d5_error(D5_ERR_SHAPE, "%s: A has %lld columns and B %lld rows", op, (long long)ka,
                        (long long)kb);
    int ab = A->ndim > 2 ? A->ndim - 2 : 0, bb = B->ndim > 2 ? B->ndim - 2 : 0;
    int batch = ab > bb ? ab : bb;
    *nd = batch + 2;
    out->ndim = 0;
    for (int i = 0; i < batch; i++) {
        int64_t x = i - (batch - ab) >= 0 ? A->shape[i - (batch - ab)] : 1;
        int64_t w = i - (batch - bb) >= 0 ? B->shape[i - (batch - bb)] : 1;
        if (x != w && x != 1 && w != 1)
            return d5_error(D5_ERR_SHAPE,
                            "%s: batch dimension %d of A (%lld) and B (%lld) do not broadcast", op,
                            i, (long long)x, (long long)w);
        ad[i] = x;
        bd[i] = w;
        yd[i] = x > w ? x : w;
        out->shape[out->ndim++] = yd[i];
    }
    ad[batch] = *m;
    ad[batch + 1] = *k;
    bd[batch] = *k;
    bd[batch + 1] = *n;
    yd[batch] = *m;
    yd[batch + 1] = *n;
    if (A->ndim > 1) out->shape[out->ndim++] = *m;
    if (B->ndim > 1) out->shape[out->ndim++] = *n;
    return D5_OK;
}

/* Sets a zero point in `attr`: its value when known, else a run-time one. */
static d5_status set_zp(dnnl_primitive_attr_t attr, int arg, int known, int32_t value, int *rt,
                        const char *op)
{
    int32_t v = known ? value : DNNL_RUNTIME_S32_VAL;
    *rt = !known;
    if (known && value == 0) return D5_OK;
    return d5__dnnl_check(dnnl_primitive_attr_set_zero_points(attr, arg, 1, 0, &v), op,
                          "zero point");
}

/* QLinearMatMul's output scales: a_scale * b_scale[n] / y_scale in float32,
 * as ONNX's reference computes the factor. */
static void scales(const float *as, const float *bs, int64_t nb, const float *ys, float *out)
{
    for (int64_t j = 0; j < nb; j++) out[j] = as[0] * bs[j] / ys[0];
}

static d5_status build(dmm *c, int nd, const int64_t *ad, const int64_t *bd, const int64_t *yd,
                       dnnl_data_type_t at, dnnl_data_type_t yt, const d5_qparam *qa,
                       const d5_qparam *qb, const d5_qparam *qy, const d5_qparam *sa,
                       const d5_qparam *sb, const d5_qparam *sy)
{
    const char *op = c->op;
    dnnl_memory_desc_t amd, bmd, bany, ymd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_post_ops_t po = NULL;
    d5_status s = d5__int8_md(&amd, nd, ad, at, 0, op);
    if (s == D5_OK) s = d5__int8_md(&bmd, nd, bd, dnnl_s8, 0, op);
    if (s == D5_OK) s = d5__int8_md(&bany, nd, bd, dnnl_s8, c->b_packed, op);
    if (s == D5_OK) s = d5__int8_md(&ymd, nd, yd, yt, 0, op);
    dnnl_matmul_desc_t md;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_matmul_desc_init(&md, &amd, &bany, NULL, &ymd), op,
                           "matmul descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), op, "attributes");
    if (s == D5_OK)
        s = set_zp(attr, DNNL_ARG_SRC, qa->known || !qa->present, d5__qparam_int(qa, 0), &c->rt_src,
                   op);
    int wei_known = c->zp_folded || qb->known || !qb->present;
    int32_t wei = c->zp_folded ? 0 : d5__qparam_int(qb, 0) + c->wei_shift;
    if (s == D5_OK) s = set_zp(attr, DNNL_ARG_WEIGHTS, wei_known, wei, &c->rt_wei, op);
    if (s == D5_OK && c->qlinear) {
        s = set_zp(attr, DNNL_ARG_DST, qy->known, d5__qparam_int(qy, 0), &c->rt_dst, op);
        int mask = sb->count > 1 ? 1 << (nd - 1) : 0;
        c->nscales = sb->count;
        c->v_scales = d5_calloc((size_t)c->nscales, sizeof(float), op);
        if (!c->v_scales) s = D5_ERR_NOMEM;
        c->rt_scales = !(sa->known && sb->known && sy->known);
        if (s == D5_OK && !c->rt_scales)
            scales(sa->data, sb->data, sb->count, sy->data, c->v_scales);
        float rt = DNNL_RUNTIME_F32_VAL;
        if (s == D5_OK)
            s = d5__dnnl_check(
                dnnl_primitive_attr_set_output_scales(attr, c->rt_scales ? 1 : c->nscales, mask,
                                                      c->rt_scales ? &rt : c->v_scales),
                op, "output scales");
        /* Round before the destination zero point is added, as ONNX does. */
        if (s == D5_OK && (!qy->known || d5__qparam_int(qy, 0) != 0)) {
            s = d5__dnnl_check(dnnl_post_ops_create(&po), op, "post-ops");
            if (s == D5_OK)
                s = d5__dnnl_check(
                    dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_round, 0.f, 0.f), op,
                    "round post-op");
            if (s == D5_OK)
                s = d5__dnnl_check(dnnl_primitive_attr_set_post_ops(attr, po), op, "post-ops");
        }
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &md, attr, c->ctx.engine, NULL), op,
                           "matmul primitive descriptor");
    if (s == D5_OK) s = d5__int8_impl(pd, op, "int8", &c->head.info);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&c->prim, pd), op, "matmul");
    if (s == D5_OK) s = d5__dnnl_arg_init(&c->a, &c->ctx, &amd, &amd, op);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->b, &c->ctx, &bmd,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), op);
    if (s == D5_OK) s = d5__dnnl_arg_init(&c->y, &c->ctx, &ymd, &ymd, op);
    if (s == D5_OK && c->b_packed) s = d5__dnnl_arg_pack(&c->b, &c->ctx, c->b8, op);
    if (s == D5_OK && c->rt_src) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->m_src_zp, op);
    if (s == D5_OK && c->rt_wei) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->m_wei_zp, op);
    if (s == D5_OK && c->rt_dst) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->m_dst_zp, op);
    if (s == D5_OK && c->rt_scales)
        s = d5__int8_rt_mem(&c->ctx, dnnl_f32, c->nscales, &c->m_scales, op);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

static d5_status create_with(dmm *c, const d5_tensor *in, int32_t nin, d5_tensor_desc *out)
{
    const char *op = c->op;
    const d5_tensor_desc *A = &in[c->ia].desc, *B = &in[c->ib].desc;
    dnnl_data_type_t at, yt = dnnl_s32;
    if (A->dtype != D5_U8 && A->dtype != D5_I8)
        return d5_error(D5_ERR_INVALID, "%s: A is %s, expected uint8 or int8", op,
                        d5_dtype_name((d5_dtype)A->dtype));
    if (B->dtype != D5_U8 && B->dtype != D5_I8)
        return d5_error(D5_ERR_INVALID, "%s: B is %s, expected uint8 or int8", op,
                        d5_dtype_name((d5_dtype)B->dtype));
    d5_status s = d5__int8_dt(op, "A", A->dtype, &at);
    int nd = 0;
    int64_t ad[MAXD], bd[MAXD], yd[MAXD], m = 0, k = 0, n = 0;
    memset(&out[0], 0, sizeof out[0]);
    if (s == D5_OK) s = shapes(op, A, B, &nd, ad, bd, yd, &out[0], &m, &k, &n);
    d5_qparam qa, qb, qy, sa, sb, sy;
    memset(&qy, 0, sizeof qy);
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    memset(&sy, 0, sizeof sy);
    /* MatMulInteger's a_zero_point may have one value per row of A. */
    if (s == D5_OK)
        s = d5__qparam_read(op, in, nin, c->ia_zp, "a_zero_point", A->dtype, c->qlinear ? -1 : m,
                            &qa);
    if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->ib_zp, "b_zero_point", B->dtype, n, &qb);
    if (s == D5_OK && c->qlinear) {
        s = d5__qparam_read(op, in, nin, c->ia_s, "a_scale", D5_F32, -1, &sa);
        if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->ib_s, "b_scale", D5_F32, n, &sb);
        if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->iy_s, "y_scale", D5_F32, -1, &sy);
        if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->iy_zp, "y_zero_point", 0, -1, &qy);
        if (s == D5_OK && (!sa.present || !sb.present || !sy.present || !qy.present))
            s = d5_error(D5_ERR_INVALID, "%s: the scales and y_zero_point are required", op);
        if (s == D5_OK && qy.dtype != D5_U8 && qy.dtype != D5_I8)
            s = d5_error(D5_ERR_INVALID, "%s: y_zero_point is %s, expected uint8 or int8", op,
                         d5_dtype_name((d5_dtype)qy.dtype));
        if (s == D5_OK) s = d5__int8_dt(op, "y_zero_point", qy.dtype, &yt);
    }
    if (s != D5_OK) return s;
    out[0].dtype = c->qlinear ? qy.dtype : D5_I32;
    if (!d5__qparam_uniform(&qa))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): a_zero_point has one value per row of A; oneDNN 2.6 takes "
                        "one zero point for the source",
                        op);
    c->nb = d5_tensor_desc_numel(B);
    c->b8 = d5_alloc(c->nb > 0 ? (size_t)c->nb : 1, op);
    if (!c->b8) return D5_ERR_NOMEM;
    /* B known with a known zero point: folded into int8 when every w - zp fits,
     * which drops the weights zero point. */
    const void *bdata = in[c->ib].data;
    if (bdata && (!qb.present || qb.known) &&
        d5__int8_weights_fold(op, bdata, B->dtype, c->nb, &qb, 1, c->b8) == D5_OK) {
        c->zp_folded = c->b_packed = 1;
    } else {
        d5_error_clear();
        if (!d5__qparam_uniform(&qb))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (dnnl): b_zero_point has one value per column of B and B - "
                            "b_zero_point is not known to fit int8; oneDNN 2.6 takes one zero "
                            "point for the weights",
                            op);
        if (B->dtype == D5_U8) c->wei_shift = -128;
        if (bdata && B->dtype == D5_U8) d5__int8_flip(bdata, c->b8, c->nb);
        if (bdata && B->dtype == D5_I8) memcpy(c->b8, bdata, (size_t)c->nb);
        c->b_packed = bdata != NULL;
        c->b_flip = !bdata && B->dtype == D5_U8;
    }
    c->flops = 2.0 * (double)d5_tensor_desc_numel(&out[0]) * (double)k;
    c->bytes = (double)d5_tensor_desc_numel(A) + (double)c->nb +
               (double)d5_tensor_desc_numel(&out[0]) * (c->qlinear ? 1.0 : 4.0);
    s = d5__dnnl_ctx_create(&c->ctx, op);
    if (s == D5_OK) s = build(c, nd, ad, bd, yd, at, yt, &qa, &qb, &qy, &sa, &sb, &sy);
    return s;
}

static d5_status create_op(const char *op, int qlinear, const d5_tensor *in, int32_t nin,
                           d5_tensor_desc *out, void **state)
{
    dmm *c = d5_calloc(1, sizeof *c, op);
    if (!c) return D5_ERR_NOMEM;
    c->op = op;
    c->qlinear = qlinear;
    if (qlinear) {
        c->ia = 0, c->ia_s = 1, c->ia_zp = 2, c->ib = 3, c->ib_s = 4, c->ib_zp = 5, c->iy_s = 6;
        c->iy_zp = 7;
    } else {
        c->ia = 0, c->ib = 1, c->ia_zp = 2, c->ib_zp = 3;
        c->ia_s = c->ib_s = c->iy_s = c->iy_zp = -1;
    }
    d5_status s = create_with(c, in, nin, out);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    *state = c;
    return D5_OK;
}

static d5_status create_mmi(const d5_op_create_args *args, void **state)
{
    return create_op("MatMulInteger", 0, args->inputs, args->ninputs, args->outputs, state);
}

static d5_status create_qlmm(const d5_op_create_args *args, void **state)
{
    return create_op("QLinearMatMul", 1, args->inputs, args->ninputs, args->outputs, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    dmm *c = state;
    const char *op = c->op;
    dnnl_exec_arg_t args[8];
    int n = 0;
    dnnl_memory_t mem;
    d5_status s = d5__dnnl_arg_in(&c->a, &c->ctx, in[c->ia].data, &mem, op);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem};
    const void *b = in[c->ib].data;
    if (c->b_flip) d5__int8_flip(b, c->b8, c->nb);
    if (c->b_flip || c->b_packed) b = c->b8;
    if (s == D5_OK) s = d5__dnnl_arg_in(&c->b, &c->ctx, b, &mem, op);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mem};
    if (s == D5_OK) s = d5__dnnl_arg_out(&c->y, out[0].data, &mem);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem};
    const d5_tensor none = {0};
    const d5_tensor *za = c->ia_zp < nin ? &in[c->ia_zp] : &none;
    const d5_tensor *zb = c->ib_zp < nin ? &in[c->ib_zp] : &none;
    if (s == D5_OK && c->rt_src) {
        c->v_src_zp = d5__qvalue_int(za, 0);
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_src_zp, &c->v_src_zp), op, "zp");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, c->m_src_zp};
    }
    if (s == D5_OK && c->rt_wei) {
        c->v_wei_zp = d5__qvalue_int(zb, 0) + c->wei_shift;
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_wei_zp, &c->v_wei_zp), op, "zp");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, c->m_wei_zp};
    }
    if (s == D5_OK && c->rt_dst) {
        c->v_dst_zp = d5__qvalue_int(&in[c->iy_zp], 0);
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_dst_zp, &c->v_dst_zp), op, "zp");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, c->m_dst_zp};
    }
    if (s == D5_OK && c->rt_scales) {
        for (int64_t j = 0; j < c->nscales; j++)
            c->v_scales[j] = d5__qvalue_float(&in[c->ia_s], 0) * d5__qvalue_float(&in[c->ib_s], j) /
                             d5__qvalue_float(&in[c->iy_s], 0);
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_scales, c->v_scales), op, "scales");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_OUTPUT_SCALES, c->m_scales};
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(c->prim, c->ctx.stream, n, args), op, "matmul");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), op, "stream");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dmm *c = state;
    *flops = c->flops;
    *bytes = c->bytes;
}

/* Both report their implementation (their state begins with a d5_op_impl). */
#define FLAGS D5_OP_REPORTS_IMPL

/* clang-format off */
const d5_op_desc d5__op_dnnl_MatMulInteger = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "MatMulInteger", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .create = create_mmi,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_QLinearMatMul = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "QLinearMatMul", .backend = "dnnl",
    .min_inputs = 8, .max_inputs = 8, .min_outputs = 1, .max_outputs = 1, .create = create_qlmm,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */
