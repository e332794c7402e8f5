/* Conv (ONNX opset 11) on oneDNN: forward, backward data and backward weights
 * (and bias), 1-d to 3-d, groups and dilations, on float32, bfloat16 or
 * float16 tensors (float16 only where oneDNN has kernels for it: 2.6 has none
 * on CPUs, so create declines). Float32 tensors under a compute precision
 * (D5_ATTR_PRECISION) run bfloat16 primitives behind converting reorders
 * (precision.c). A bias may be float32 with lower-precision tensors. The primitives pick
 * their preferred layouts; inputs and outputs stay in ONNX's plain layouts and
 * are reordered around each call, so the time measured is the time an NCHW
 * caller sees. The forward, weight and bias gradients of a float32 2-d
 * convolution with few input channels and unit strides (an image network's
 * first layer) are computed in C instead (conv_first.c, conv_wgrad.c); such
 * a convolution stays float32 under the compute precision bf16, which would
 * be slower there (FEW_CHANNELS_F32). In backward, dY converted for the data
 * gradient serves the weight gradient too where both read the same layout.
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

#include <stdio.h>
#include <string.h>

typedef struct dconv {
    d5_dnnl_impl impl; /* first: d5_op_impl_get reads it */
    d5_conv_geometry g;
    d5_dnnl_ctx ctx;
    /* The caller's layouts (plain, or blocked with D5_ATTR_BLOCKED) in the
     * tensors' type; the bias in its own. */
    dnnl_memory_desc_t src, wei, bia, dst;
    int64_t blocked;
    dnnl_post_ops_t po; /* FusedConv's post-ops; NULL for Conv */
    dnnl_dims_t strides, dilates, pad_l, pad_r;
    dnnl_primitive_desc_t fwd_pd;
    dnnl_primitive_t fwd;
    d5_dnnl_arg f_src, f_wei, f_dst;
    dnnl_memory_t bias_mem;
    /* backward, built on first use */
    dnnl_primitive_t bwd_data, bwd_wei;
    d5_dnnl_arg d_diff_dst, d_wei, d_diff_src, w_src, w_diff_dst, w_diff_wei;
    dnnl_memory_t diff_bias_mem;
    int dy_shared; /* d_diff_dst and w_diff_dst convert dY into the same layout */
    int c_wgrad;   /* the weight gradient runs in C */
    int c_forward; /* the forward runs in C (conv_first.c) */
    d5_conv_wgrad wgrad;
    d5__fusion fusion;          /* FusedConv's post-ops; zero for Conv */
    dnnl_memory_t z_mem;        /* Z as given */
    dnnl_primitive_t z_reorder; /* Z into the destination's layout */
    int z_identity;             /* ... which is Z's own: a copy */
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
    if (c->po) dnnl_post_ops_destroy(c->po);
    d5__conv_wgrad_free(&c->wgrad);
    d5__dnnl_ctx_free(&c->ctx);
    d5_free(c);
}

/* A descriptor of `plain`'s dims and type `dt` in the layout the primitive prefers. */
static d5_status any_md(dnnl_memory_desc_t *any, const dnnl_memory_desc_t *plain,
                        dnnl_data_type_t dt)
{
    return d5__dnnl_check(
        dnnl_memory_desc_init_by_tag(any, plain->ndims, plain->dims, dt, dnnl_format_tag_any),
        "Conv", "memory descriptor");
}

static const dnnl_memory_desc_t *query(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

/* The post-ops of a FusedConv: sum (Z), then ReLU. NULL for a Conv. */
static d5_status post_ops(const d5__fusion *f, dnnl_post_ops_t *po)
{
    *po = NULL;
    if (!f->sum && !f->relu) return D5_OK;
    d5_status s = d5__dnnl_check(dnnl_post_ops_create(po), "FusedConv", "post-ops");
    if (s == D5_OK && f->sum)
        s = d5__dnnl_check(dnnl_post_ops_append_sum(*po, 1.0f), "FusedConv", "sum post-op");
    if (s == D5_OK && f->relu)
        s = d5__dnnl_check(dnnl_post_ops_append_eltwise(*po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f),
                           "FusedConv", "ReLU post-op");
    return s;
}

/* The forward descriptor with sources and weights of type `compute`
 * (d5_dnnl_build_fn): the destination keeps the tensors' type. */
static d5_status build_forward(void *self, dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                               dnnl_primitive_desc_t *pd)
{
    dconv *c = self;
    const d5_conv_geometry *g = &c->g;
    dnnl_memory_desc_t src_any, wei_any, dst_any;
    d5_status s = any_md(&src_any, &c->src, compute);
    if (s == D5_OK) s = any_md(&wei_any, &c->wei, compute);
    if (s == D5_OK) s = any_md(&dst_any, &c->dst, c->impl.tensors);
    /* A layout asked for is the primitive's, so that nothing is reordered.
     * Under a lower compute type the primitive picks both, and f_src and
     * f_dst reorder: oneDNN 2.6.3 writes a blocked float32 destination from
     * bfloat16 operands without AMX (jit_bf16:avx512_core_bf16), 3.4 times
     * as long as brgconv's AMX kernel and the reorder after it (ResNet-20's
     * 16-channel 3x3 layer, batch 32, one thread: 1652 us against 481 us). */
    if ((c->blocked & D5_BLOCKED_X) && compute == c->impl.tensors) src_any = c->src;
    if ((c->blocked & D5_BLOCKED_Y) && compute == c->impl.tensors) dst_any = c->dst;
    dnnl_convolution_desc_t cd;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                               &cd, dnnl_forward_training, dnnl_convolution_direct, &src_any,
                               &wei_any, g->has_bias ? &c->bia : NULL, &dst_any, c->strides,
                               c->dilates, c->pad_l, c->pad_r),
                           "Conv", "forward descriptor");
    dnnl_primitive_attr_t attr = NULL;
    if (s == D5_OK) s = d5__dnnl_attr(&attr, fpmath, c->po, "Conv");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(pd, &cd, attr, c->ctx.engine, NULL), "Conv",
                           "forward primitive descriptor");
    if (attr) dnnl_primitive_attr_destroy(attr);
    return s;
}

/* Every float input has X's type, but a bias may be float32. */
static d5_status check_types(const d5_tensor *in, int32_t nin)
{
    int32_t t = in[0].desc.dtype;
    for (int32_t i = 1; i < nin; i++) {
        int32_t d = in[i].desc.dtype;
        if (d == D5_DTYPE_INVALID || d == t || (i == 2 && d == D5_F32)) continue;
        return d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): input %d is %s but X is %s%s", (int)i,
                        d5_dtype_name((d5_dtype)d), d5_dtype_name((d5_dtype)t),
                        i == 2 ? " (a bias may also be float32)" : "");
    }
    return D5_OK;
}

/* Z's memory and its reorder into the destination's layout (a copy when the
 * layouts agree). */
static d5_status z_setup(dconv *c, const dnnl_memory_desc_t *z_md)
{
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *dst = query(c->fwd_pd, dnnl_query_dst_md);
    c->z_identity = dnnl_memory_desc_equal(z_md, dst) != 0;
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

/* Why a float32 convolution of few input channels (d5__conv_wgrad_fits)
 * ignores the compute precision bf16. Its sums are short (C x kh x kw: 25
 * products for LeNet's first layer), so the bfloat16 kernels, which block
 * channels by 16 or more, do mostly padding, and converting X and dY (6 or
 * 16 channels) to bfloat16 costs more than the products. On the Sapphire
 * Rapids machine of the tests, one thread, forward and weight gradient:
 * LeNet's 1 -> 6 channels 5x5 at batch 64, 361 us in float32 (conv_first.c,
 * conv_wgrad.c) against 1258 us in bfloat16 with its conversions;
 * ResNet-20's 3 -> 16 channels 3x3 at batch 32 with a blocked output, 381 us
 * against 881 us. */
#define FEW_CHANNELS_F32                                                                           \
    "float32: with at most 4 input channels the bfloat16 convolution and its conversions are "     \
    "slower than float32"
_Static_assert(D5_CONV_WGRAD_MAX_CHANNELS == 4, "FEW_CHANNELS_F32 names the limit");

static d5_status create_with(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int fused, void **state)
{
    int64_t blocked = 0;
    d5_status bs = d5_attrs_int(attrs, D5_ATTR_BLOCKED, 0, &blocked);
    if (bs == D5_OK) bs = check_types(in, nin);
    if (bs != D5_OK) return bs;
    dconv *c = d5_calloc(1, sizeof *c, "Conv (dnnl)");
    if (!c) return D5_ERR_NOMEM;
    c->blocked = blocked;
    int32_t t = in[0].desc.dtype;
    d5_status s = d5__dnnl_impl_init(&c->impl, attrs, t, "Conv");
    if (s == D5_OK && fused) s = d5__fusion_read(in, nin, attrs, &c->fusion);
    /* The geometry wants B of X's type; a float32 bias is checked above. */
    d5_tensor_desc bias = nin > 2 ? in[2].desc : (d5_tensor_desc){0};
    if (bias.dtype != D5_DTYPE_INVALID) bias.dtype = t;
    if (s == D5_OK)
        s = d5__conv_geometry(&in[0].desc, &in[1].desc, nin > 2 ? &bias : NULL, attrs, &c->g);
    const d5_conv_geometry *g = &c->g;
    if (s == D5_OK && g->n > 3)
        s = d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): %d spatial dimensions; oneDNN takes 1 to 3",
                     (int)g->n);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&c->ctx, "Conv");
    if (s == D5_OK) s = post_ops(&c->fusion, &c->po);
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = t;
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
    dnnl_data_type_t dt = c->impl.tensors;
    s = d5__dnnl_plain_md_of(&c->src, nd, in[0].desc.shape, dt, "Conv");
    if (s == D5_OK) s = d5__dnnl_plain_md_of(&c->wei, wnd, wdims, dt, "Conv");
    if (s == D5_OK) s = d5__dnnl_plain_md_of(&c->dst, nd, out[0].shape, dt, "Conv");
    if (s == D5_OK && g->has_bias)
        s = d5__dnnl_plain_md_of(&c->bia, 1, &g->out_channels, d5__dnnl_type(in[2].desc.dtype),
                                 "Conv");
    if (s == D5_OK && blocked && g->n != 2)
        s = d5_error(D5_ERR_UNSUPPORTED, "Conv (dnnl): the blocked layout is for 2-d convolutions");
    dnnl_memory_desc_t z_md = c->dst;
    if (s == D5_OK && (blocked & D5_BLOCKED_Z))
        s = d5__dnnl_blocked_md_of(&z_md, out[0].shape, g->out_channels, dt, "Conv");
    if (s == D5_OK && (blocked & D5_BLOCKED_X))
        s = d5__dnnl_blocked_md_of(&c->src, in[0].desc.shape, g->in_channels, dt, "Conv");
    if (s == D5_OK && (blocked & D5_BLOCKED_Y))
        s = d5__dnnl_blocked_md_of(&c->dst, out[0].shape, g->out_channels, dt, "Conv");
    /* Float32 tensors with few input channels stay float32 under bf16: see
     * FEW_CHANNELS_F32. */
    if (s == D5_OK && dt == dnnl_f32 && c->impl.asked == dnnl_bf16 && d5__conv_wgrad_fits(g))
        s = d5__dnnl_impl_keep_f32(&c->impl, FEW_CHANNELS_F32, build_forward, c, &c->fwd_pd);
    else if (s == D5_OK)
        s = d5__dnnl_impl_choose(&c->impl, "convolution", fused ? "FusedConv" : "Conv",
                                 build_forward, c, &c->fwd_pd);
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
    /* Weights known now stay constant: reordered (and converted) into the
     * primitive's layout once. */
    if (s == D5_OK) s = d5__dnnl_arg_pack(&c->f_wei, &c->ctx, in[1].data, "Conv");
    if (s == D5_OK && c->fusion.sum) s = z_setup(c, &z_md);
    /* Float32 in ONNX's layouts with no post-op but ReLU: the forward runs in C. */
    c->c_forward = s == D5_OK && dt == dnnl_f32 && c->impl.compute == dnnl_f32 && !blocked &&
                   !c->fusion.sum && d5__conv_wgrad_fits(g);
    if (c->c_forward) snprintf(c->impl.info.forward, sizeof c->impl.info.forward, "d5:conv_first");
    if (s != D5_OK) {
        destroy(c);
        return s;
    }
    *state = c;
    return D5_OK;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    return create_with(args->inputs, args->ninputs, args->attrs, args->outputs, 0, state);
}

static d5_status create_fused(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
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

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dconv *c = state;
    if (c->c_forward)
        return d5__conv_first_run(NULL, &c->g, in[0].data, in[1].data,
                                  c->g.has_bias ? in[2].data : NULL, c->fusion.relu, out[0].data);
    dnnl_exec_arg_t args[4];
    int n = 0;
    dnnl_memory_t m;
    void *mh = NULL;
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
    /* The sum post-op accumulates into the destination: it starts as Z,
     * unless Z already is the destination (D5_OP_Z_IN_PLACE). */
    if (s == D5_OK && c->fusion.sum &&
        !(c->z_identity && in[3].data == out[0].data &&
          dnnl_memory_get_data_handle(m, &mh) == dnnl_success && mh == out[0].data)) {
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

/* Frees what a failed build_backward_with left. */
static void free_backward(dconv *c)
{
    d5_dnnl_arg *args[] = {&c->d_diff_dst, &c->d_wei,      &c->d_diff_src,
                           &c->w_src,      &c->w_diff_dst, &c->w_diff_wei};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
    if (c->bwd_data) dnnl_primitive_destroy(c->bwd_data);
    if (c->bwd_wei) dnnl_primitive_destroy(c->bwd_wei);
    if (c->diff_bias_mem) dnnl_memory_destroy(c->diff_bias_mem);
    c->bwd_data = c->bwd_wei = NULL;
    c->diff_bias_mem = NULL;
    c->dy_shared = 0;
}

/* The backward primitives, reading their operands (X, W, dY) in `compute`
 * and writing gradients in the tensors' type; `hint` is a forward descriptor
 * of that compute type. */
static d5_status build_backward_with(dconv *c, dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                                     const_dnnl_primitive_desc_t hint)
{
    const d5_conv_geometry *g = &c->g;
    dnnl_data_type_t t = c->impl.tensors;
    dnnl_memory_desc_t src_c, wei_c, dst_c, src_t, wei_t;
    d5_status s = any_md(&src_c, &c->src, compute);
    if (s == D5_OK) s = any_md(&wei_c, &c->wei, compute);
    if (s == D5_OK) s = any_md(&dst_c, &c->dst, compute);
    if (s == D5_OK) s = any_md(&src_t, &c->src, t);
    if (s == D5_OK) s = any_md(&wei_t, &c->wei, t);
    dnnl_convolution_desc_t dd, wd;
    dnnl_primitive_desc_t dpd = NULL, wpd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    if (s == D5_OK) s = d5__dnnl_attr(&attr, fpmath, NULL, "Conv");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_dilated_convolution_backward_data_desc_init(
                               &dd, dnnl_convolution_direct, &src_t, &wei_c, &dst_c, c->strides,
                               c->dilates, c->pad_l, c->pad_r),
                           "Conv", "backward-data descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&dpd, &dd, attr, c->ctx.engine, hint), "Conv",
                           "backward-data primitive descriptor");
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
                               &wd, dnnl_convolution_direct, &src_c, &wei_t,
                               g->has_bias ? &c->bia : NULL, &dst_c, c->strides, c->dilates,
                               c->pad_l, c->pad_r),
                           "Conv", "backward-weights descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&wpd, &wd, attr, c->ctx.engine, hint), "Conv",
                           "backward-weights primitive descriptor");
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
    c->dy_shared = s == D5_OK && !c->d_diff_dst.same &&
                   dnnl_memory_desc_equal(&c->d_diff_dst.inner_md, &c->w_diff_dst.inner_md);
    if (s == D5_OK) {
        d5_op_impl *info = &c->impl.info;
        d5__dnnl_impl_name(dpd, info->backward_data, sizeof info->backward_data);
        d5__dnnl_impl_name(wpd, info->backward_weights, sizeof info->backward_weights);
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (dpd) dnnl_primitive_desc_destroy(dpd);
    if (wpd) dnnl_primitive_desc_destroy(wpd);
    if (s != D5_OK) free_backward(c);
    return s;
}

/* The backward primitives in the forward's compute type; float32 tensors
 * whose lower-precision backward oneDNN lacks fall back to float32 (noted). */
static d5_status build_backward(dconv *c)
{
    d5_dnnl_impl *im = &c->impl;
    d5_status s = build_backward_with(c, im->compute, im->fpmath, c->fwd_pd);
    if (s != D5_ERR_UNSUPPORTED || im->tensors != dnnl_f32 || im->compute == dnnl_f32) return s;
    dnnl_primitive_desc_t hint = NULL;
    s = build_forward(c, dnnl_f32, dnnl_fpmath_mode_strict, &hint);
    if (s == D5_OK) s = build_backward_with(c, dnnl_f32, dnnl_fpmath_mode_strict, hint);
    if (hint) dnnl_primitive_desc_destroy(hint);
    if (s == D5_OK) {
        size_t used = strlen(im->info.note);
        snprintf(im->info.note + used, sizeof im->info.note - used,
                 "%sbackward in float32: oneDNN has no %s backward convolution for it",
                 used ? "; " : "", d5__dnnl_type_name(im->compute));
    }
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *gin = call->grad_inputs;
    dconv *c = state;
    d5_status s = c->bwd_data ? D5_OK : build_backward(c);
    dnnl_memory_t m;
    int dy_converted = 0; /* d_diff_dst's buffer holds this call's dY */
    if (s == D5_OK && gin[0].data) {
        dnnl_exec_arg_t args[3];
        s = d5__dnnl_arg_in(&c->d_diff_dst, &c->ctx, gout[0].data, &m, "Conv");
        dy_converted = s == D5_OK && !c->d_diff_dst.same;
        args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m};
        if (s == D5_OK) s = d5__dnnl_arg_in(&c->d_wei, &c->ctx, in[1].data, &m, "Conv");
        args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m};
        if (s == D5_OK) s = d5__dnnl_arg_out(&c->d_diff_src, gin[0].data, &m);
        args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m};
        if (s == D5_OK) s = run(c, c->bwd_data, args, 3, "backward data");
        if (s == D5_OK) s = d5__dnnl_arg_finish(&c->d_diff_src, &c->ctx, "Conv");
    }
    int want_bias = nin > 2 && c->g.has_bias && gin[2].data;
    /* The C kernel computes float32 only, in ONNX's layouts. */
    int c_kernel = c->impl.tensors == dnnl_f32 && c->impl.compute == dnnl_f32 &&
                   !(c->blocked & (D5_BLOCKED_X | D5_BLOCKED_Y));
    if (s == D5_OK && (gin[1].data || want_bias) && c_kernel && d5__conv_wgrad_fits(&c->g)) {
        if (!c->c_wgrad) {
            s = d5__conv_wgrad_init(&c->wgrad, &c->g, NULL);
            c->c_wgrad = s == D5_OK;
            snprintf(c->impl.info.backward_weights, sizeof c->impl.info.backward_weights,
                     "d5:conv_wgrad");
        }
        if (s == D5_OK)
            s = d5__conv_wgrad_run(&c->wgrad, in[0].data, gout[0].data, gin[1].data,
                                   want_bias ? gin[2].data : NULL);
    } else if (s == D5_OK && (gin[1].data || want_bias)) {
        /* oneDNN computes both; a weight gradient nobody wants goes to scratch. */
        void *scratch = NULL;
        void *dw = gin[1].data;
        if (!dw) {
            size_t nw = 0;
            s = d5_tensor_desc_bytes(&in[1].desc, &nw);
            dw = scratch = s == D5_OK ? d5_alloc(nw, "Conv weight gradient") : NULL;
            if (!dw) return s == D5_OK ? D5_ERR_NOMEM : s;
        }
        dnnl_exec_arg_t args[4];
        int n = 0;
        s = d5__dnnl_arg_in(&c->w_src, &c->ctx, in[0].data, &m, "Conv");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, m};
        /* dY as converted for the data gradient, when this primitive reads
         * the same layout: converted once per call. */
        if (s == D5_OK && dy_converted && c->dy_shared)
            m = c->d_diff_dst.inner_mem;
        else if (s == D5_OK)
            s = d5__dnnl_arg_in(&c->w_diff_dst, &c->ctx, gout[0].data, &m, "Conv");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m};
        if (s == D5_OK) s = d5__dnnl_arg_out(&c->w_diff_wei, dw, &m);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_WEIGHTS, m};
        void *bias_scratch = NULL;
        if (s == D5_OK && c->g.has_bias) {
            void *db = want_bias ? gin[2].data : NULL;
            if (!db)
                db = bias_scratch =
                    d5_alloc((size_t)c->g.out_channels * d5_dtype_size((d5_dtype)in[2].desc.dtype),
                             "bias gradient");
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
    const dconv *c = state;
    const d5_conv_geometry *g = &c->g;
    double esize = c->impl.tensors == dnnl_f32 ? 4.0 : 2.0;
    *flops = d5__conv_flops(g);
    *bytes = esize * ((double)g->batch * (double)g->in_channels * (double)g->in_size +
                      (double)g->out_channels * (double)(g->in_channels / g->group) *
                          (double)g->kernel_size +
                      (double)g->batch * (double)g->out_channels * (double)g->out_size);
}

/* Both take the blocked layout and report their implementation. */
#define CONV_FLAGS  (D5_OP_HAS_BACKWARD | D5_OP_BLOCKED_LAYOUT | D5_OP_REPORTS_IMPL)
#define FUSED_FLAGS (D5_OP_Z_IN_PLACE | D5_OP_BLOCKED_LAYOUT | D5_OP_REPORTS_IMPL)

/* clang-format off */
const d5_op_desc d5__op_dnnl_Conv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = CONV_FLAGS, .name = "Conv", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .create = create,
    .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */

/* clang-format off */
const d5_op_desc d5__op_dnnl_FusedConv = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FUSED_FLAGS, .name = "FusedConv", .backend = "dnnl",
    .min_inputs = 2, .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .create = create_fused,
    .forward = forward, .destroy = destroy, .cost = cost};
/* clang-format on */
