/* QuantizeLinear and DequantizeLinear (ONNX opsets 10-19) on oneDNN, float32
 * against uint8 or int8 (and int32 for DequantizeLinear), per tensor or per
 * axis. The tensor is seen as [outer, C, inner] around the axis, the form in
 * which oneDNN's jit kernels take a per-channel parameter.
 *
 * QuantizeLinear, y = saturate(round(x / y_scale) + y_zero_point) rounded half
 * to even, is oneDNN's binary primitive: x divided by y_scale, then a round
 * post-op and a binary post-op that adds the zero point, converted with
 * saturation. oneDNN's reorders would multiply by 1 / y_scale and add the
 * zero point before rounding, which differs from ONNX in the last unit where
 * x / y_scale is a half-integer or near one; the binary primitive divides and
 * rounds first, and matches ONNX exactly.
 *
 * DequantizeLinear, y = (x - x_zero_point) * x_scale, is a reorder with the
 * source zero point and output scales passed at each call: one zero point per
 * tensor (a per-axis zero point whose values are not all equal is declined:
 * oneDNN 2.6 reorders take one), scales per tensor or per axis. The
 * difference x - zero point is exact in float32 and the product rounds once,
 * as in ONNX.
 * https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html
 * https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html */
#include "int8.h"

#include <string.h>

typedef struct dq {
    d5_int8_head head; /* first: d5_op_impl_get reads it */
    const char *op;
    d5_dnnl_ctx ctx;
    dnnl_primitive_t prim;
    dnnl_memory_t x, scale, zp, y;
    int has_zp, per_axis;
    int32_t v_zp; /* DequantizeLinear's run-time zero point */
    int64_t numel;
    double bytes;
} dq;

static void destroy(void *state)
{
    dq *c = state;
    if (!c) return;
    dnnl_memory_t mems[] = {c->x, c->scale, c->zp, c->y};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (c->prim) dnnl_primitive_destroy(c->prim);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c);
}

/* The axis, the [outer, C, inner] view of x (*ndims 3, or 2 for [outer, C]
 * when inner is 1) and the scale and zero point. */
static d5_status view(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                      int32_t zp_dtype, int *ndims, int64_t *dims, d5_qparam *scale, d5_qparam *zp)
{
    const d5_tensor_desc *x = &in[0].desc;
    int64_t axis = 1, block = 0, output_dtype = 0, precision = 0;
    d5_status s = d5_attrs_int(attrs, "axis", 1, &axis);
    if (s == D5_OK) s = d5_attrs_int(attrs, "block_size", 0, &block);
    if (s == D5_OK) s = d5_attrs_int(attrs, "output_dtype", 0, &output_dtype);
    if (s == D5_OK) s = d5_attrs_int(attrs, "precision", 0, &precision);
    if (s != D5_OK) return s;
    if (block != 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): blocked quantization (block_size %lld)", op,
                        (long long)block);
    if (output_dtype != 0 || precision != 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): attribute %s (ref runs it)", op,
                        output_dtype ? "output_dtype" : "precision");
    /* The axis matters only to per-axis parameters: a 1-d x with one scale
     * keeps the default axis 1 that it does not have. */
    int64_t channels = -1;
    if (axis < 0) axis += x->ndim;
    if (axis >= 0 && axis < x->ndim) channels = x->shape[axis];
    s = d5__qparam_read(op, in, nin, 1, "scale", D5_F32, channels, scale);
    if (s == D5_OK) s = d5__qparam_read(op, in, nin, 2, "zero_point", zp_dtype, channels, zp);
    if (s == D5_OK && !scale->present)
        s = d5_error(D5_ERR_INVALID, "%s: the scale (input 1) is required", op);
    if (s != D5_OK) return s;
    dims[0] = dims[1] = dims[2] = 1;
    for (int32_t i = 0; i < x->ndim; i++) {
        int k = i < axis ? 0 : i == axis ? 1 : 2;
        dims[k] *= x->shape[i];
    }
    /* [outer, C, 1] as [outer, C]: oneDNN 2.6.3's jit binary kernel misreads
     * a per-channel operand [1, C, 1] when the last dimension is 1. */
    *ndims = dims[2] == 1 ? 2 : 3;
    return D5_OK;
}

static d5_status finish(dq *c, dnnl_primitive_desc_t pd)
{
    d5_status s = d5__int8_impl(pd, c->op, "f32", &c->head.info);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&c->prim, pd), c->op, "primitive");
    return s;
}

static d5_status memories(dq *c, const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *y)
{
    d5_status s = d5__dnnl_check(dnnl_memory_create(&c->x, x, c->ctx.engine, DNNL_MEMORY_NONE),
                                 c->op, "memory");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&c->y, y, c->ctx.engine, DNNL_MEMORY_NONE), c->op,
                           "memory");
    return s;
}

static d5_status quantize(dq *c, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                          d5_tensor_desc *out)
{
    const char *op = c->op;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): x is %s; float32 only", op,
                        d5_dtype_name((d5_dtype)x->dtype));
    int64_t dims[3], pdims[3] = {1, 1, 1}, zdims[3] = {1, 1, 1};
    d5_qparam scale, zp;
    int nd = 3;
    d5_status s = view(op, in, nin, attrs, D5_DTYPE_INVALID, &nd, dims, &scale, &zp);
    if (s != D5_OK) return s;
    if (zp.present && zp.dtype != D5_U8 && zp.dtype != D5_I8)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): y_zero_point is %s; uint8 and int8 only",
                        op, d5_dtype_name((d5_dtype)zp.dtype));
    *out = *x;
    out->dtype = zp.present ? zp.dtype : D5_U8;
    if (scale.count > 1) pdims[1] = dims[1];
    if (zp.count > 1) zdims[1] = dims[1];
    dnnl_data_type_t yt = out->dtype == D5_U8 ? dnnl_u8 : dnnl_s8;
    dnnl_memory_desc_t xmd, smd, zmd, ymd;
    s = d5__int8_md(&xmd, nd, dims, dnnl_f32, 0, op);
    if (s == D5_OK) s = d5__int8_md(&smd, nd, pdims, dnnl_f32, 0, op);
    if (s == D5_OK) s = d5__int8_md(&zmd, nd, zdims, yt, 0, op);
    if (s == D5_OK) s = d5__int8_md(&ymd, nd, dims, yt, 0, op);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&c->ctx, op);
    dnnl_binary_desc_t bd;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_binary_desc_init(&bd, dnnl_binary_div, &xmd, &smd, &ymd), op,
                           "binary descriptor");
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK) s = d5__dnnl_check(dnnl_post_ops_create(&po), op, "post-ops");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_round, 0.f, 0.f), op,
                           "round post-op");
    c->has_zp = zp.present;
    if (s == D5_OK && c->has_zp)
        s = d5__dnnl_check(dnnl_post_ops_append_binary(po, dnnl_binary_add, &zmd), op,
                           "zero point post-op");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), op, "attributes");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_set_post_ops(attr, po), op, "post-ops");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &bd, attr, c->ctx.engine, NULL), op,
                           "binary primitive descriptor");
    if (s == D5_OK) s = finish(c, pd);
    if (s == D5_OK) s = memories(c, &xmd, &ymd);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&c->scale, &smd, c->ctx.engine, DNNL_MEMORY_NONE), op,
                           "memory");
    if (s == D5_OK && c->has_zp)
        s = d5__dnnl_check(dnnl_memory_create(&c->zp, &zmd, c->ctx.engine, DNNL_MEMORY_NONE), op,
                           "memory");
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (pd) dnnl_primitive_desc_destroy(pd);
    c->bytes = 5.0 * (double)c->numel;
    return s;
}

static d5_status dequantize(dq *c, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out)
{
    const char *op = c->op;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->dtype != D5_U8 && x->dtype != D5_I8 && x->dtype != D5_I32)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): x is %s; uint8, int8 and int32 only", op,
                        d5_dtype_name((d5_dtype)x->dtype));
    int64_t dims[3];
    d5_qparam scale, zp;
    int nd = 3;
    d5_status s = view(op, in, nin, attrs, x->dtype, &nd, dims, &scale, &zp);
    if (s != D5_OK) return s;
    if (!d5__qparam_uniform(&zp))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): x_zero_point has one value per slice along the axis; oneDNN "
                        "2.6 reorders take one zero point",
                        op);
    *out = *x;
    out->dtype = D5_F32;
    c->has_zp = zp.present;
    c->per_axis = scale.count > 1;
    dnnl_data_type_t xt;
    dnnl_memory_desc_t xmd, ymd;
    s = d5__int8_dt(op, "x", x->dtype, &xt);
    if (s == D5_OK) s = d5__int8_md(&xmd, nd, dims, xt, 0, op);
    if (s == D5_OK) s = d5__int8_md(&ymd, nd, dims, dnnl_f32, 0, op);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&c->ctx, op);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    float rs = DNNL_RUNTIME_F32_VAL;
    int32_t rz = DNNL_RUNTIME_S32_VAL;
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), op, "attributes");
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_primitive_attr_set_output_scales(attr, 1, c->per_axis ? 1 << 1 : 0, &rs), op,
            "scales");
    if (s == D5_OK && c->has_zp)
        s = d5__dnnl_check(dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &rz), op,
                           "zero point");
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, &xmd, c->ctx.engine, &ymd, c->ctx.engine, attr),
            op, "reorder primitive descriptor");
    if (s == D5_OK) s = finish(c, pd);
    if (s == D5_OK) s = memories(c, &xmd, &ymd);
    if (s == D5_OK) s = d5__int8_rt_mem(&c->ctx, dnnl_f32, scale.count, &c->scale, op);
    if (s == D5_OK && c->has_zp) s = d5__int8_rt_mem(&c->ctx, dnnl_s32, 1, &c->zp, op);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (pd) dnnl_primitive_desc_destroy(pd);
    c->bytes = ((double)d5_dtype_size((d5_dtype)x->dtype) + 4.0) * (double)c->numel;
    return s;
}

static d5_status create_op(const char *op, int quant, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    dq *c = d5_calloc(1, sizeof *c, op);
    if (!c) return D5_ERR_NOMEM;
    c->op = op;
    c->numel = d5_tensor_desc_numel(&in[0].desc);
    d5_status s = quant ? quantize(c, in, nin, attrs, out) : dequantize(c, in, nin, attrs, out);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    *state = c;
    return D5_OK;
}

static d5_status create_q(const d5_op_create_args *args, void **state)
{
    return create_op("QuantizeLinear", 1, args->inputs, args->ninputs, args->attrs, args->outputs,
                     state);
}

static d5_status create_dq(const d5_op_create_args *args, void **state)
{
    return create_op("DequantizeLinear", 0, args->inputs, args->ninputs, args->attrs, args->outputs,
                     state);
}

static d5_status bind(dnnl_memory_t m, const void *p, const char *op)
{
    return d5__dnnl_check(dnnl_memory_set_data_handle(m, (void *)p), op, "memory");
}

static d5_status forward_q(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dq *c = state;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC_0, c->x},
                               {DNNL_ARG_SRC_1, c->scale},
                               {DNNL_ARG_DST, c->y},
                               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, c->zp}};
    d5_status s = bind(c->x, in[0].data, c->op);
    if (s == D5_OK) s = bind(c->scale, in[1].data, c->op);
    if (s == D5_OK) s = bind(c->y, out[0].data, c->op);
    if (s == D5_OK && c->has_zp) s = bind(c->zp, in[2].data, c->op);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(c->prim, c->ctx.stream, c->has_zp ? 4 : 3, args),
                           c->op, "binary");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), c->op, "stream");
    return s;
}

static d5_status forward_dq(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dq *c = state;
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_FROM, c->x},
                               {DNNL_ARG_TO, c->y},
                               {DNNL_ARG_ATTR_OUTPUT_SCALES, c->scale},
                               {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_FROM, c->zp}};
    d5_status s = bind(c->x, in[0].data, c->op);
    if (s == D5_OK) s = bind(c->y, out[0].data, c->op);
    if (s == D5_OK) s = bind(c->scale, in[1].data, c->op);
    if (s == D5_OK && c->has_zp) {
        c->v_zp = d5__qvalue_int(&in[2], 0);
        s = bind(c->zp, &c->v_zp, c->op);
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(c->prim, c->ctx.stream, c->has_zp ? 4 : 3, args),
                           c->op, "reorder");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), c->op, "stream");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const dq *c = state;
    *flops = 2.0 * (double)c->numel;
    *bytes = c->bytes;
}

/* Both report their implementation (their state begins with a d5_op_impl). */
#define FLAGS D5_OP_REPORTS_IMPL

/* clang-format off */
const d5_op_desc d5__op_dnnl_QuantizeLinear = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "QuantizeLinear", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = create_q,
    .forward = forward_q, .destroy = destroy, .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_DequantizeLinear = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = "DequantizeLinear", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = create_dq,
    .forward = forward_dq, .destroy = destroy, .cost = cost};
/* clang-format on */
