/* ConvInteger and QLinearConv (ONNX opset 10) on oneDNN's int8 convolution:
 * uint8 or int8 X, int8 weights, int32 accumulation, 1-d to 3-d, groups,
 * pads, strides and dilations as Conv's (ref/conv_shape.c reads them).
 *
 * X's zero point becomes oneDNN's source zero point: padding then adds
 * nothing, as ONNX pads with the zero point. oneDNN 2.6's convolutions take
 * no weights zero point, so W's (one per tensor or per output channel) is
 * subtracted from W when W is known at create and every w - zp fits int8
 * (weights of a quantized model are initializers), and uint8 W with zero
 * point 128 is flipped into int8 at each call; any other W with a nonzero
 * zero point is declined (D5_ERR_UNSUPPORTED) and the executor runs ref.
 *
 * QLinearConv's output is saturate(round((acc + B) * x_scale * w_scale /
 * y_scale) + y_zero_point) with the int32 bias B, w_scale per tensor or per
 * output channel (oneDNN's output scales), rounded half to even; the round
 * post-op rounds before the destination zero point is added, as ONNX does.
 * oneDNN 2.6 takes a convolution's output scales only at create: the scales
 * must be known then (initializers), else the operator declines.
 * https://onnx.ai/onnx/operators/onnx__ConvInteger.html
 * https://onnx.ai/onnx/operators/onnx__QLinearConv.html */
#include "../ref/conv_shape.h"
#include "int8.h"

#include <string.h>

typedef struct dci {
    d5_int8_head head; /* first: d5_op_impl_get reads it */
    const char *op;
    int qlinear;
    d5_conv_geometry g;
    d5_dnnl_ctx ctx;
    dnnl_primitive_t prim;
    d5_dnnl_arg x, w, y;
    dnnl_memory_t bias_mem;
    int ix, iw, ix_zp, iw_zp, ix_s, iw_s, iy_s, iy_zp, ib; /* input slots; -1: none */
    int w_flip;   /* uint8 W with zero point 128, flipped into w8 at each call */
    int w_packed; /* W known at create, its zero point subtracted in w8 */
    int8_t *w8;
    int64_t nw;
    int rt_src, rt_dst;
    dnnl_memory_t m_src_zp, m_dst_zp;
    int32_t v_src_zp, v_dst_zp;
    double flops, bytes;
} dci;

static void destroy(void *state)
{
    dci *c = state;
    if (!c) return;
    d5__dnnl_arg_free(&c->x);
    d5__dnnl_arg_free(&c->w);
    d5__dnnl_arg_free(&c->y);
    dnnl_memory_t mems[] = {c->bias_mem, c->m_src_zp, c->m_dst_zp};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (c->prim) dnnl_primitive_destroy(c->prim);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c->w8);
    d5_free(c);
}

/* The zero point of the destination or source in `attr`: its value when known,
 * else a run-time one. */
static d5_status set_zp(dnnl_primitive_attr_t attr, int arg, const d5_qparam *q, int *rt,
                        const char *op)
{
    int32_t v = q->known || !q->present ? d5__qparam_int(q, 0) : DNNL_RUNTIME_S32_VAL;
    *rt = q->present && !q->known;
    if (!*rt && v == 0) return D5_OK;
    return d5__dnnl_check(dnnl_primitive_attr_set_zero_points(attr, arg, 1, 0, &v), op,
                          "zero point");
}

/* QLinearConv's output scales (x_scale * w_scale[m] / y_scale, float32, as
 * ONNX's reference computes the factor) and the round post-op. */
static d5_status requantize(dci *c, dnnl_primitive_attr_t attr, const d5_qparam *sx,
                            const d5_qparam *sw, const d5_qparam *sy, const d5_qparam *qy)
{
    const char *op = c->op;
    if (!sx->known || !sw->known || !sy->known)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): x_scale, w_scale and y_scale must be known at create "
                        "(oneDNN 2.6 convolutions take no run-time output scales)",
                        op);
    float *v = d5_alloc((size_t)sw->count * sizeof *v, op);
    if (!v) return D5_ERR_NOMEM;
    for (int64_t m = 0; m < sw->count; m++)
        v[m] = d5__qparam_float(sx, 0) * d5__qparam_float(sw, m) / d5__qparam_float(sy, 0);
    d5_status s = d5__dnnl_check(
        dnnl_primitive_attr_set_output_scales(attr, sw->count, sw->count > 1 ? 1 << 1 : 0, v), op,
        "output scales");
    d5_free(v);
    if (s != D5_OK || (qy->known && d5__qparam_int(qy, 0) == 0)) return s;
    dnnl_post_ops_t po = NULL;
    s = d5__dnnl_check(dnnl_post_ops_create(&po), op, "post-ops");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_round, 0.f, 0.f), op,
                           "round post-op");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_set_post_ops(attr, po), op, "post-ops");
    if (po) dnnl_post_ops_destroy(po);
    return s;
}

/* W as oneDNN takes it: int8 with no zero point (see the top). */
static d5_status weights(dci *c, const d5_tensor *in, const d5_qparam *qw)
{
    const char *op = c->op;
    const d5_tensor_desc *W = &in[c->iw].desc;
    c->nw = d5_tensor_desc_numel(W);
    c->w8 = d5_alloc(c->nw > 0 ? (size_t)c->nw : 1, op);
    if (!c->w8) return D5_ERR_NOMEM;
    if (in[c->iw].data && (qw->known || !qw->present)) {
        c->w_packed = 1;
        int64_t per_channel = c->g.out_channels > 0 ? c->nw / c->g.out_channels : 1;
        return d5__int8_weights_fold(op, in[c->iw].data, W->dtype, c->nw, qw,
                                     per_channel > 0 ? per_channel : 1, c->w8);
    }
    int uniform = qw->known && d5__qparam_uniform(qw);
    int32_t z = uniform ? d5__qparam_int(qw, 0) : 0;
    if (W->dtype == D5_I8 && (!qw->present || (uniform && z == 0))) return D5_OK;
    if (W->dtype == D5_U8 && uniform && z == 128) {
        c->w_flip = 1;
        return D5_OK;
    }
    const char *why = !qw->present        ? "absent (uint8 weights above 127 do not fit int8)"
                      : !qw->known        ? "not known at create"
                      : W->dtype == D5_I8 ? "not 0"
                                          : "not 128";
    return d5_error(D5_ERR_UNSUPPORTED,
                    "%s (dnnl): W (%s) is not known at create and its w_zero_point is %s; oneDNN "
                    "2.6 convolutions take int8 weights and no weights zero point",
                    op, d5_dtype_name((d5_dtype)W->dtype), why);
}

static d5_status build(dci *c, const d5_tensor *in, const d5_tensor_desc *y, dnnl_data_type_t xt,
                       dnnl_data_type_t yt, const d5_qparam *qx, const d5_qparam *qy,
                       const d5_qparam *sx, const d5_qparam *sw, const d5_qparam *sy)
{
    const char *op = c->op;
    const d5_conv_geometry *g = &c->g;
    int nd = g->n + 2, wnd = 0;
    int64_t wdims[D5_MAX_DIMS + 1];
    dnnl_dims_t strides, dilates, pad_l, pad_r;
    if (g->group > 1) wdims[wnd++] = g->group;
    wdims[wnd++] = g->out_channels / g->group;
    wdims[wnd++] = g->in_channels / g->group;
    for (int32_t i = 0; i < g->n; i++) {
        wdims[wnd++] = g->kernel[i];
        strides[i] = g->strides[i];
        dilates[i] = g->dilations[i] - 1;
        pad_l[i] = g->pads_begin[i];
        pad_r[i] = g->pads_end[i];
    }
    dnnl_memory_desc_t xmd, wmd, ymd, xany, wany, yany, bmd;
    d5_status s = d5__int8_md(&xmd, nd, in[c->ix].desc.shape, xt, 0, op);
    if (s == D5_OK) s = d5__int8_md(&xany, nd, in[c->ix].desc.shape, xt, 1, op);
    if (s == D5_OK) s = d5__int8_md(&wmd, wnd, wdims, dnnl_s8, 0, op);
    if (s == D5_OK) s = d5__int8_md(&wany, wnd, wdims, dnnl_s8, 1, op);
    if (s == D5_OK) s = d5__int8_md(&ymd, nd, y->shape, yt, 0, op);
    if (s == D5_OK) s = d5__int8_md(&yany, nd, y->shape, yt, 1, op);
    if (s == D5_OK) s = d5__int8_md(&bmd, 1, &g->out_channels, dnnl_s32, 0, op);
    dnnl_convolution_desc_t cd;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                               &cd, dnnl_forward_inference, dnnl_convolution_direct, &xany, &wany,
                               g->has_bias ? &bmd : NULL, &yany, strides, dilates, pad_l, pad_r),
                           op, "convolution descriptor");
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), op, "attributes");
    if (s == D5_OK) s = set_zp(attr, DNNL_ARG_SRC, qx, &c->rt_src, op);
    if (s == D5_OK && c->qlinear) s = set_zp(attr, DNNL_ARG_DST, qy, &c->rt_dst, op);
    if (s == D5_OK && c->qlinear) s = requantize(c, attr, sx, sw, sy, qy);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &cd, attr, c->ctx.engine, NULL), op,
                           "convolution primitive descriptor");
    if (s == D5_OK) s = d5__int8_impl(pd, op, "int8", &c->head.info);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&c->prim, pd), op, "convolution");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->x, &c->ctx, &xmd,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), op);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->w, &c->ctx, &wmd,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), op);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->y, &c->ctx, &ymd,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), op);
    if (s == D5_OK && g->has_bias)
        s = d5__dnnl_check(dnnl_memory_create(&c->bias_mem, &bmd, c->ctx.engine, DNNL_MEMORY_NONE),
                           op, "bias memory");
    if (s == D5_OK && c->w_packed) s = d5__dnnl_arg_pack(&c->w, &c->ctx, c->w8, op);
    if (s == D5_OK && c->rt_src) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->m_src_zp, op);
    if (s == D5_OK && c->rt_dst) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->m_dst_zp, op);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

static d5_status create_with(dci *c, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out)
{
    const char *op = c->op;
    const d5_tensor_desc *X = &in[c->ix].desc, *W = &in[c->iw].desc;
    if ((X->dtype != D5_U8 && X->dtype != D5_I8) || (W->dtype != D5_U8 && W->dtype != D5_I8))
        return d5_error(D5_ERR_INVALID, "%s: x is %s and w %s, expected uint8 or int8", op,
                        d5_dtype_name((d5_dtype)X->dtype), d5_dtype_name((d5_dtype)W->dtype));
    /* The geometry reads shapes and attributes only; it takes float32. */
    d5_tensor_desc xf = *X, wf = *W;
    xf.dtype = wf.dtype = D5_F32;
    d5_status s = d5__conv_geometry(&xf, &wf, NULL, attrs, &c->g);
    if (s != D5_OK) return s;
    if (c->g.n > 3)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): %d spatial dimensions; oneDNN takes 1 to 3",
                        op, (int)c->g.n);
    int64_t M = c->g.out_channels;
    d5_qparam qx, qw, qy, sx, sw, sy;
    memset(&qy, 0, sizeof qy);
    memset(&sx, 0, sizeof sx);
    memset(&sw, 0, sizeof sw);
    memset(&sy, 0, sizeof sy);
    s = d5__qparam_read(op, in, nin, c->ix_zp, "x_zero_point", X->dtype, -1, &qx);
    if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->iw_zp, "w_zero_point", W->dtype, M, &qw);
    if (s == D5_OK && c->qlinear) {
        s = d5__qparam_read(op, in, nin, c->ix_s, "x_scale", D5_F32, -1, &sx);
        if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->iw_s, "w_scale", D5_F32, M, &sw);
        if (s == D5_OK) s = d5__qparam_read(op, in, nin, c->iy_s, "y_scale", D5_F32, -1, &sy);
        if (s == D5_OK)
            s = d5__qparam_read(op, in, nin, c->iy_zp, "y_zero_point", D5_DTYPE_INVALID, -1, &qy);
        if (s == D5_OK && (!sx.present || !sw.present || !sy.present || !qy.present))
            s = d5_error(D5_ERR_INVALID, "%s: the scales and y_zero_point are required", op);
        if (s == D5_OK && qy.dtype != D5_U8 && qy.dtype != D5_I8)
            s = d5_error(D5_ERR_INVALID, "%s: y_zero_point is %s, expected uint8 or int8", op,
                         d5_dtype_name((d5_dtype)qy.dtype));
        if (s == D5_OK && d5__has_input(in, nin, c->ib)) {
            const d5_tensor_desc *B = &in[c->ib].desc;
            if (B->dtype != D5_I32 || B->ndim != 1 || B->shape[0] != M)
                s = d5_error(D5_ERR_SHAPE, "%s: B is %s%s, expected int32 with %lld values", op,
                             d5_dtype_name((d5_dtype)B->dtype), B->ndim == 1 ? "" : " (not 1-d)",
                             (long long)M);
            c->g.has_bias = 1;
        }
    }
    if (s != D5_OK) return s;
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = c->qlinear ? qy.dtype : D5_I32;
    d5__conv_output_desc(&c->g, &out[0]);
    dnnl_data_type_t xt, yt;
    s = d5__int8_dt(op, "x", X->dtype, &xt);
    if (s == D5_OK) s = d5__int8_dt(op, "y", out[0].dtype, &yt);
    if (s == D5_OK) s = weights(c, in, &qw);
    if (s != D5_OK) return s;
    c->flops = d5__conv_flops(&c->g);
    c->bytes = (double)d5_tensor_desc_numel(X) + (double)c->nw +
               (double)d5_tensor_desc_numel(&out[0]) * (double)d5_dtype_size(out[0].dtype);
    s = d5__dnnl_ctx_create(&c->ctx, op);
    if (s == D5_OK) s = build(c, in, &out[0], xt, yt, &qx, &qy, &sx, &sw, &sy);
    return s;
}

static d5_status create_op(const char *op, int qlinear, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    dci *c = d5_calloc(1, sizeof *c, op);
    if (!c) return D5_ERR_NOMEM;
    c->op = op;
    c->qlinear = qlinear;
    if (qlinear) {
        c->ix = 0, c->ix_s = 1, c->ix_zp = 2, c->iw = 3, c->iw_s = 4, c->iw_zp = 5, c->iy_s = 6;
        c->iy_zp = 7, c->ib = 8;
    } else {
        c->ix = 0, c->iw = 1, c->ix_zp = 2, c->iw_zp = 3;
        c->ix_s = c->iw_s = c->iy_s = c->iy_zp = c->ib = -1;
    }
    d5_status s = create_with(c, in, nin, attrs, out);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    *state = c;
    return D5_OK;
}

static d5_status create_ci(const d5_op_create_args *args, void **state)
{
    return create_op("ConvInteger", 0, args->inputs, args->ninputs, args->attrs, args->outputs,
                     state);
}

static d5_status create_qlc(const d5_op_create_args *args, void **state)
{
    return create_op("QLinearConv", 1, args->inputs, args->ninputs, args->attrs, args->outputs,
                     state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    dci *c = state;
    const char *op = c->op;
    dnnl_exec_arg_t args[6];
    int n = 0;
    dnnl_memory_t mem;
    d5_status s = d5__dnnl_arg_in(&c->x, &c->ctx, in[c->ix].data, &mem, op);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mem};
    const void *w = in[c->iw].data;
    if (c->w_flip) d5__int8_flip(w, c->w8, c->nw);
    if (c->w_flip || c->w_packed) w = c->w8;
    if (s == D5_OK) s = d5__dnnl_arg_in(&c->w, &c->ctx, w, &mem, op);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, mem};
    if (s == D5_OK && c->g.has_bias) {
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->bias_mem, in[c->ib].data), op, "bias");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->bias_mem};
    }
    if (s == D5_OK) s = d5__dnnl_arg_out(&c->y, out[0].data, &mem);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, mem};
    if (s == D5_OK && c->rt_src) {
        c->v_src_zp = c->ix_zp < nin ? d5__qvalue_int(&in[c->ix_zp], 0) : 0;
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_src_zp, &c->v_src_zp), op, "zp");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, c->m_src_zp};
    }
    if (s == D5_OK && c->rt_dst) {
        c->v_dst_zp = d5__qvalue_int(&in[c->iy_zp], 0);
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->m_dst_zp, &c->v_dst_zp), op, "zp");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, c->m_dst_zp};
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(c->prim, c->ctx.stream, n, args), op,
                           "convolution");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&c->y, &c->ctx, op);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), op, "stream");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dci *c = state;
    *flops = c->flops;
    *bytes = c->bytes;
}

/* Both report their implementation (their state begins with a d5_op_impl). */
#define FLAGS D5_OP_REPORTS_IMPL

/* clang-format off */
const d5_op_desc d5__op_dnnl_ConvInteger = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "ConvInteger", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .create = create_ci,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_QLinearConv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "QLinearConv", .backend = "dnnl",
    .min_inputs = 8, .max_inputs = 9, .min_outputs = 1, .max_outputs = 1, .create = create_qlc,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */
