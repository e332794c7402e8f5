/* Conv (ONNX opset 11) on oneDNN: forward, backward data and backward weights
 * (and bias), float32, 1-d to 3-d, groups and dilations. The primitives pick
 * their preferred layouts; inputs and outputs stay in ONNX's plain layouts and
 * are reordered around each call, so the time measured is the time an NCHW
 * caller sees. The weight gradient of a convolution with one input channel
 * (an image network's first layer) is computed in C instead (conv_wgrad.c).
 * FusedConv (ref/fusedconv.c) is the same convolution with oneDNN post-ops:
 * a sum that adds Z, then ReLU, applied while the output is in cache.
 * D5_ATTR_BLOCKED (set by the executor's layout propagation) asks for X, Y
 * or Z in oneDNN's blocked layout (nChw16c, or nChw8c without AVX-512)
 * instead of ONNX's: values passed between two convolutions are then never
 * reordered.
 * https://onnx.ai/onnx/operators/onnx__Conv.html */
#include "../ref/fusedconv.h"
#include "conv_wgrad.h"
#include "dnnl_util.h"

#include <string.h>

typedef struct dconv {
    d5_conv_geometry g;
    d5_dnnl_ctx ctx;
    dnnl_memory_desc_t src, wei, bia, dst; /* plain */
    dnnl_dims_t strides, dilates, pad_l, pad_r;
    dnnl_primitive_desc_t fwd_pd;
    dnnl_primitive_t fwd;
    d5_dnnl_arg f_src, f_wei, f_dst;
    dnnl_memory_t bias_mem;
    /* backward, built on first use */
    dnnl_primitive_t bwd_data, bwd_wei;
    d5_dnnl_arg d_diff_dst, d_wei, d_diff_src, w_src, w_diff_dst, w_diff_wei;
    dnnl_memory_t diff_bias_mem;
    int c_wgrad; /* the weight gradient runs in C */
    d5_conv_wgrad wgrad;
    d5__fusion fusion;          /* FusedConv's post-ops; zero for Conv */
    dnnl_memory_t z_mem;        /* Z as given */
    dnnl_primitive_t z_reorder; /* Z into the destination's layout */
} dconv;

static void destroy(void *state)
{
    dconv *c = state;
    if (!c) return;
    d5_dnnl_arg *args[] = {&c->f_src,      &c->f_wei, &c->f_dst,      &c->d_diff_dst, &c->d_wei,
                           &c->d_diff_src, &c->w_src, &c->w_diff_dst, &c->w_diff_wei};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
    if (c->bias_mem) dnnl_memory_destroy(c->bias_mem);
    if (c->diff_bias_mem) dnnl_memory_destroy(c->diff_bias_mem);
    if (c->fwd) dnnl_primitive_destroy(c->fwd);
    if (c->bwd_data) dnnl_primitive_destroy(c->bwd_data);
    if (c->bwd_wei) dnnl_primitive_destroy(c->bwd_wei);
    if (c->fwd_pd) dnnl_primitive_desc_destroy(c->fwd_pd);
    if (c->z_mem) dnnl_memory_destroy(c->z_mem);
    if (c->z_reorder) dnnl_primitive_destroy(c->z_reorder);
    d5__conv_wgrad_free(&c->wgrad);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c);
}

static d5_status any_md(dnnl_memory_desc_t *any, const dnnl_memory_desc_t *plain)
{
    return d5__dnnl_check(
        dnnl_memory_desc_init_by_tag(any, plain->ndims, plain->dims, dnnl_f32, dnnl_format_tag_any),
        "Conv", "memory descriptor");
}

static const dnnl_memory_desc_t *query(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

/* The post-ops of a FusedConv: sum (Z), then ReLU. NULL *attr for a Conv. */
static d5_status post_ops(const d5__fusion *f, dnnl_primitive_attr_t *attr)
{
    *attr = NULL;
    if (!f->sum && !f->relu) return D5_OK;
    dnnl_post_ops_t po = NULL;
    d5_status s = d5__dnnl_check(dnnl_post_ops_create(&po), "FusedConv", "post-ops");
    if (s == D5_OK && f->sum)
        s = d5__dnnl_check(dnnl_post_ops_append_sum(po, 1.0f), "FusedConv", "sum post-op");
    if (s == D5_OK && f->relu)
        s = d5__dnnl_check(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f),
                           "FusedConv", "ReLU post-op");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_attr_create(attr), "FusedConv", "attributes");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_attr_set_post_ops(*attr, po), "FusedConv", "post-ops");
    if (po) dnnl_post_ops_destroy(po);
    if (s != D5_OK && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

/* Z's memory and its reorder into the destination's layout (a copy when the
 * layouts agree). */
static d5_status z_setup(dconv *c, const dnnl_memory_desc_t *z_md)
{
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *dst = query(c->fwd_pd, dnnl_query_dst_md);
    d5_status s = d5__dnnl_check(
        dnnl_memory_create(&c->z_mem, z_md, c->ctx.engine, DNNL_MEMORY_NONE), "FusedConv", "Z");
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, z_md, c->ctx.engine, dst, c->ctx.engine, NULL),
            "FusedConv", "Z reorder");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_create(&c->z_reorder, pd), "FusedConv", "Z reorder");
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

static d5_status create_with(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int fused, void **state)
{
    int64_t blocked = 0;
    d5_status bs = d5_attrs_int(attrs, D5_ATTR_BLOCKED, 0, &blocked);
    if (bs != D5_OK) return bs;
    for (int32_t i = 0; i < nin; i++)
        if (in[i].desc.dtype != D5_DTYPE_INVALID && in[i].desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): input %d is %s; float32 only", i,
                            d5_dtype_name((d5_dtype)in[i].desc.dtype));
    dconv *c = d5_calloc(1, sizeof *c, "Conv (dnnl)");
    if (!c) return D5_ERR_NOMEM;
    d5_status s = fused ? d5__fusion_read(in, nin, attrs, &c->fusion) : D5_OK;
    if (s == D5_OK)
        s = d5__conv_geometry(&in[0].desc, &in[1].desc, nin > 2 ? &in[2].desc : NULL, attrs, &c->g);
    const d5_conv_geometry *g = &c->g;
    if (s == D5_OK && g->n > 3)
        s = d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): %d spatial dimensions; oneDNN takes 1 to 3",
                     (int)g->n);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&c->ctx, "Conv");
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    d5__conv_output_desc(g, &out[0]);
    int nd = g->n + 2;
    int64_t wdims[D5_MAX_DIMS + 1];
    int wnd = 0;
    if (g->group > 1) wdims[wnd++] = g->group;
    wdims[wnd++] = g->out_channels / g->group;
    wdims[wnd++] = g->in_channels / g->group;
    for (int32_t i = 0; i < g->n; i++) {
        wdims[wnd++] = g->kernel[i];
        c->strides[i] = g->strides[i];
        c->dilates[i] = g->dilations[i] - 1;
        c->pad_l[i] = g->pads_begin[i];
        c->pad_r[i] = g->pads_end[i];
    }
    s = d5__dnnl_plain_md(&c->src, nd, in[0].desc.shape, "Conv");
    if (s == D5_OK) s = d5__dnnl_plain_md(&c->wei, wnd, wdims, "Conv");
    if (s == D5_OK) s = d5__dnnl_plain_md(&c->dst, nd, out[0].shape, "Conv");
    if (s == D5_OK && g->has_bias) s = d5__dnnl_plain_md(&c->bia, 1, &g->out_channels, "Conv");
    if (s == D5_OK && blocked && g->n != 2)
        s = d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): the blocked layout is for 2-d convolutions");
    dnnl_memory_desc_t src_any, wei_any, dst_any, z_md = c->dst;
    if (s == D5_OK && (blocked & D5_BLOCKED_Z))
        s = d5__dnnl_blocked_md(&z_md, out[0].shape, g->out_channels, "Conv");
    if (s == D5_OK && (blocked & D5_BLOCKED_X))
        s = d5__dnnl_blocked_md(&c->src, in[0].desc.shape, g->in_channels, "Conv");
    if (s == D5_OK && (blocked & D5_BLOCKED_Y))
        s = d5__dnnl_blocked_md(&c->dst, out[0].shape, g->out_channels, "Conv");
    if (s == D5_OK) s = any_md(&src_any, &c->src);
    if (s == D5_OK) s = any_md(&wei_any, &c->wei);
    if (s == D5_OK) s = any_md(&dst_any, &c->dst);
    /* A layout asked for is the primitive's, so that nothing is reordered. */
    if (blocked & D5_BLOCKED_X) src_any = c->src;
    if (blocked & D5_BLOCKED_Y) dst_any = c->dst;
    dnnl_convolution_desc_t cd;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                               &cd, dnnl_forward_training, dnnl_convolution_direct, &src_any,
                               &wei_any, g->has_bias ? &c->bia : NULL, &dst_any, c->strides,
                               c->dilates, c->pad_l, c->pad_r),
                           "Conv", "forward descriptor");
    dnnl_primitive_attr_t pattr = NULL;
    if (s == D5_OK) s = post_ops(&c->fusion, &pattr);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&c->fwd_pd, &cd, pattr, c->ctx.engine, NULL),
                           "Conv", "forward primitive descriptor");
    if (pattr) dnnl_primitive_attr_destroy(pattr);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_create(&c->fwd, c->fwd_pd), "Conv", "forward");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->f_src, &c->ctx, &c->src, query(c->fwd_pd, dnnl_query_src_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->f_wei, &c->ctx, &c->wei, query(c->fwd_pd, dnnl_query_weights_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->f_dst, &c->ctx, &c->dst, query(c->fwd_pd, dnnl_query_dst_md),
                              "Conv");
    if (s == D5_OK && g->has_bias)
        s = d5__dnnl_check(
            dnnl_memory_create(&c->bias_mem, &c->bia, c->ctx.engine, DNNL_MEMORY_NONE), "Conv",
            "bias memory");
    /* Weights known now stay constant: reordered into the primitive's layout once. */
    if (s == D5_OK) s = d5__dnnl_arg_pack(&c->f_wei, &c->ctx, in[1].data, "Conv");
    if (s == D5_OK && c->fusion.sum) s = z_setup(c, &z_md);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    *state = c;
    return D5_OK;
}

static d5_status create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    return create_with(in, nin, attrs, out, 0, state);
}

static d5_status create_fused(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                              d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    d5_status s = create_with(in, nin, attrs, out, 1, state);
    if (s == D5_OK && (s = d5__fusion_check_z(in, nin, &out[0])) != D5_OK) {
        destroy(*state);
        *state = NULL;
    }
    return s;
}

static d5_status run(dconv *c, dnnl_primitive_t p, dnnl_exec_arg_t *args, int n, const char *what)
{
    d5_status s = d5__dnnl_check(dnnl_primitive_execute(p, c->ctx.stream, n, args), "Conv", what);
    return s;
}

static d5_status forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                         int32_t nout)
{
    (void)nin;
    (void)nout;
    dconv *c = state;
    dnnl_exec_arg_t args[4];
    int n = 0;
    dnnl_memory_t m;
    d5_status s = d5__dnnl_arg_in(&c->f_src, &c->ctx, in[0].data, &m, "Conv");
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
    if (s == D5_OK) s = d5__dnnl_arg_in(&c->f_wei, &c->ctx, in[1].data, &m, "Conv");
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m};
    if (s == D5_OK && c->g.has_bias) {
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->bias_mem, in[2].data), "Conv", "bias");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, c->bias_mem};
    }
    if (s == D5_OK) s = d5__dnnl_arg_out(&c->f_dst, out[0].data, &m);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, m};
    /* The sum post-op accumulates into the destination: it starts as Z. */
    if (s == D5_OK && c->fusion.sum) {
        dnnl_exec_arg_t z[2] = {{DNNL_ARG_FROM, c->z_mem}, {DNNL_ARG_TO, m}};
        s = d5__dnnl_check(dnnl_memory_set_data_handle(c->z_mem, in[3].data), "FusedConv", "Z");
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_primitive_execute(c->z_reorder, c->ctx.stream, 2, z),
                               "FusedConv", "Z reorder");
    }
    if (s == D5_OK) s = run(c, c->fwd, args, n, "forward");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&c->f_dst, &c->ctx, "Conv");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), "Conv", "stream");
    return s;
}

static d5_status build_backward(dconv *c)
{
    const d5_conv_geometry *g = &c->g;
    dnnl_memory_desc_t src_any, wei_any, dst_any;
    d5_status s = any_md(&src_any, &c->src);
    if (s == D5_OK) s = any_md(&wei_any, &c->wei);
    if (s == D5_OK) s = any_md(&dst_any, &c->dst);
    dnnl_convolution_desc_t dd, wd;
    dnnl_primitive_desc_t dpd = NULL, wpd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_backward_data_desc_init(
                               &dd, dnnl_convolution_direct, &src_any, &wei_any, &dst_any,
                               c->strides, c->dilates, c->pad_l, c->pad_r),
                           "Conv", "backward-data descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&dpd, &dd, NULL, c->ctx.engine, c->fwd_pd),
                           "Conv", "backward-data primitive descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_create(&c->bwd_data, dpd), "Conv", "backward data");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->d_diff_dst, &c->ctx, &c->dst, query(dpd, dnnl_query_diff_dst_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->d_wei, &c->ctx, &c->wei, query(dpd, dnnl_query_weights_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->d_diff_src, &c->ctx, &c->src, query(dpd, dnnl_query_diff_src_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_backward_weights_desc_init(
                               &wd, dnnl_convolution_direct, &src_any, &wei_any,
                               g->has_bias ? &c->bia : NULL, &dst_any, c->strides, c->dilates,
                               c->pad_l, c->pad_r),
                           "Conv", "backward-weights descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&wpd, &wd, NULL, c->ctx.engine, c->fwd_pd),
                           "Conv", "backward-weights primitive descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_create(&c->bwd_wei, wpd), "Conv", "backward weights");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->w_src, &c->ctx, &c->src, query(wpd, dnnl_query_src_md), "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->w_diff_dst, &c->ctx, &c->dst, query(wpd, dnnl_query_diff_dst_md),
                              "Conv");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&c->w_diff_wei, &c->ctx, &c->wei,
                              query(wpd, dnnl_query_diff_weights_md), "Conv");
    if (s == D5_OK && g->has_bias)
        s = d5__dnnl_check(
            dnnl_memory_create(&c->diff_bias_mem, &c->bia, c->ctx.engine, DNNL_MEMORY_NONE), "Conv",
            "bias gradient memory");
    if (dpd) dnnl_primitive_desc_destroy(dpd);
    if (wpd) dnnl_primitive_desc_destroy(wpd);
    return s;
}

static d5_status backward(void *state, const d5_tensor *gout, int32_t nout, const d5_tensor *in,
                          int32_t nin, const d5_tensor *out, d5_tensor *gin)
{
    (void)nout;
    (void)out;
    dconv *c = state;
    d5_status s = c->bwd_data ? D5_OK : build_backward(c);
    dnnl_memory_t m;
    if (s == D5_OK && gin[0].data) {
        dnnl_exec_arg_t args[3];
        s = d5__dnnl_arg_in(&c->d_diff_dst, &c->ctx, gout[0].data, &m, "Conv");
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m};
        if (s == D5_OK) s = d5__dnnl_arg_in(&c->d_wei, &c->ctx, in[1].data, &m, "Conv");
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m};
        if (s == D5_OK) s = d5__dnnl_arg_out(&c->d_diff_src, gin[0].data, &m);
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m};
        if (s == D5_OK) s = run(c, c->bwd_data, args, 3, "backward data");
        if (s == D5_OK) s = d5__dnnl_arg_finish(&c->d_diff_src, &c->ctx, "Conv");
    }
    int want_bias = nin > 2 && c->g.has_bias && gin[2].data;
    if (s == D5_OK && (gin[1].data || want_bias) && d5__conv_wgrad_fits(&c->g)) {
        if (!c->c_wgrad) {
            s = d5__conv_wgrad_init(&c->wgrad, &c->g);
            c->c_wgrad = s == D5_OK;
        }
        if (s == D5_OK)
            s = d5__conv_wgrad_run(&c->wgrad, in[0].data, gout[0].data, gin[1].data,
                                   want_bias ? gin[2].data : NULL);
    } else if (s == D5_OK && (gin[1].data || want_bias)) {
        /* oneDNN computes both; a weight gradient nobody wants goes to scratch. */
        float *scratch = NULL;
        void *dw = gin[1].data;
        if (!dw) {
            int64_t nw = d5_tensor_desc_numel(&in[1].desc);
            dw = scratch = d5_alloc((size_t)nw * sizeof(float), "Conv weight gradient");
            if (!dw) return D5_ERR_NOMEM;
        }
        dnnl_exec_arg_t args[4];
        int n = 0;
        s = d5__dnnl_arg_in(&c->w_src, &c->ctx, in[0].data, &m, "Conv");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        if (s == D5_OK) s = d5__dnnl_arg_in(&c->w_diff_dst, &c->ctx, gout[0].data, &m, "Conv");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m};
        if (s == D5_OK) s = d5__dnnl_arg_out(&c->w_diff_wei, dw, &m);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, m};
        float *bias_scratch = NULL;
        if (s == D5_OK && c->g.has_bias) {
            void *db = want_bias ? gin[2].data : NULL;
            if (!db)
                db = bias_scratch =
                    d5_alloc((size_t)c->g.out_channels * sizeof(float), "bias gradient");
            if (!db) s = D5_ERR_NOMEM;
            if (s == D5_OK)
                s = d5__dnnl_check(dnnl_memory_set_data_handle(c->diff_bias_mem, db), "Conv",
                                   "bias");
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_BIAS, c->diff_bias_mem};
        }
        if (s == D5_OK) s = run(c, c->bwd_wei, args, n, "backward weights");
        if (s == D5_OK) s = d5__dnnl_arg_finish(&c->w_diff_wei, &c->ctx, "Conv");
        if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), "Conv", "stream");
        d5_free(scratch);
        d5_free(bias_scratch);
    }
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->ctx.stream), "Conv", "stream");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const d5_conv_geometry *g = &((dconv *)state)->g;
    *flops = d5__conv_flops(g);
    *bytes = 4.0 * ((double)g->batch * (double)g->in_channels * (double)g->in_size +
                    (double)g->out_channels * (double)(g->in_channels / g->group) *
                        (double)g->kernel_size +
                    (double)g->batch * (double)g->out_channels * (double)g->out_size);
}

const d5_op_desc d5__op_dnnl_Conv = {
    D5_OP_ABI_VERSION, D5_OP_HAS_BACKWARD, "Conv",  "dnnl", 2, 3, 1, 1, create,
    forward,           backward,           destroy, cost};

const d5_op_desc d5__op_dnnl_FusedConv = {
    D5_OP_ABI_VERSION, 0,       "FusedConv", "dnnl",  2,   4, 1, 1,
    create_fused,      forward, NULL,        destroy, cost};
