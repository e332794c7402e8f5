/* BatchNormalization (ONNX opset 15) on oneDNN's batch normalization
 * primitives, float32, with the semantics of ref/batchnormalization.c:
 *   Y = (X - mean) / sqrt(var + epsilon) * scale + B, per channel of
 *   X (N x C x D1 x ... x Dn).
 * Inference (training_mode 0): dnnl_use_global_stats with input_mean and
 * input_var, scale and B through dnnl_use_scale | dnnl_use_shift; Y only.
 * Training (training_mode 1): oneDNN computes the batch mean and the biased
 * (population) variance, as ONNX does; the optional outputs running_mean and
 * running_var = input * momentum + batch statistic * (1 - momentum) are
 * computed here, per channel.
 *
 * Backward (built on first use) gives the gradients of all five inputs.
 * Inference: oneDNN's backward with global statistics gives dX = scale /
 * sqrt(var + epsilon) * dY, dscale and dB; the gradients of input_mean and
 * input_var follow per channel from those two sums (dmean = -scale * dB * inv,
 * dvar = -scale * dscale * inv^2 / 2, inv = 1 / sqrt(var + epsilon)).
 * Training: oneDNN's full backward through the batch statistics, which it
 * needs as inputs: backward recomputes them with the forward primitive from
 * the X it is given (so backward stays a function of its arguments); the
 * running outputs' gradients add (1 - momentum) * (dRM + 2 (X - mean) dRV) / M
 * to dX (M elements per channel) and momentum * dRM, momentum * dRV to
 * input_mean and input_var.
 *
 * X of rank 2, 3 or 6 to 8 is handed to oneDNN as N x C x (D1 * ... * Dn) x 1,
 * the same memory. X, Y and their gradients stay in ONNX's plain layout for the
 * caller and are reordered around each call into the layout of the fastest
 * kernel (see choose_layout), so the time measured is the time an NCHW caller
 * sees. https://onnx.ai/onnx/operators/onnx__BatchNormalization.html */
#include "dnnl_util.h"

#include <math.h>
#include <string.h>

#define OP "BatchNormalization"

typedef struct dbn {
    int64_t n, c, inner, numel; /* X seen as n x c x inner */
    double epsilon, momentum;
    int training;
    unsigned flags;
    d5_dnnl_ctx ctx;
    dnnl_memory_desc_t data_md, data_in, ch_md; /* X plain; X as the primitives read it */
    dnnl_primitive_desc_t fwd_pd;               /* forward_training in training mode */
    dnnl_primitive_t fwd, bwd;                  /* bwd built on first use */
    d5_dnnl_arg a_src, a_dst, a_diff_dst, a_diff_src;
    dnnl_memory_t mean, var, scale, shift, diff_scale, diff_shift; /* plain [c] */
    dnnl_memory_t ymem; /* training backward: Y of the recomputed forward */
    float *stats;       /* training: batch mean [c] and variance [c] */
    float *chbuf;       /* backward: dscale and dB when the caller does not want them */
} dbn;

static const char *const input_names[5] = {"X", "scale", "B", "input_mean", "input_var"};

static void destroy(void *state)
{
    dbn *b = state;
    if (!b) return;
    d5_dnnl_arg *args[] = {&b->a_src, &b->a_dst, &b->a_diff_dst, &b->a_diff_src};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
    dnnl_memory_t mems[] = {b->mean,       b->var,        b->scale, b->shift,
                            b->diff_scale, b->diff_shift, b->ymem};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (b->fwd) dnnl_primitive_destroy(b->fwd);
    if (b->bwd) dnnl_primitive_destroy(b->bwd);
    if (b->fwd_pd) dnnl_primitive_desc_destroy(b->fwd_pd);
    d5_free(b->stats);
    d5_free(b->chbuf);
    d5__dnnl_ctx_free(&b->ctx);
    d5_free(b);
}

static const dnnl_memory_desc_t *query(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

/* Checks inputs and attributes the way the ref operator does; fills b. */
static d5_status check(dbn *b, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                       int32_t nout)
{
    for (int32_t i = 0; i < 5; i++) {
        if (i >= nin || in[i].desc.dtype == D5_DTYPE_INVALID)
            return d5_error(D5_ERR_INVALID, OP " (dnnl): input %d (%s) is required", i,
                            input_names[i]);
        if (in[i].desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, OP " (dnnl): input %d (%s) is %s; float32 only", i,
                            input_names[i], d5_dtype_name((d5_dtype)in[i].desc.dtype));
    }
    int64_t training, opset;
    d5_status s = d5_attrs_int(attrs, "__opset", 19, &opset);
    if (s == D5_OK && opset < 14)
        return d5_error(D5_ERR_UNSUPPORTED,
                        OP " (dnnl): opset %lld; before opset 14 the mode comes from is_test, "
                           "spatial and the outputs, which the ref backend handles",
                        (long long)opset);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &b->epsilon);
    if (s == D5_OK) s = d5_attrs_float(attrs, "momentum", 0.9, &b->momentum);
    if (s == D5_OK) s = d5_attrs_int(attrs, "training_mode", 0, &training);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        OP " (dnnl): X has %d dims, expected at least 2 (N x C x ...)",
                        (int)x->ndim);
    b->training = training != 0;
    b->n = x->shape[0];
    b->c = x->shape[1];
    b->inner = 1;
    for (int32_t i = 2; i < x->ndim; i++) b->inner *= x->shape[i];
    b->numel = b->n * b->c * b->inner;
    for (int32_t i = 1; i < 5; i++)
        if (in[i].desc.ndim != 1 || in[i].desc.shape[0] != b->c) {
            char got[96];
            d5_tensor_desc_format(&in[i].desc, got, sizeof got);
            return d5_error(D5_ERR_SHAPE,
                            OP " (dnnl): %s is %s, expected [%lld] (one value per channel)",
                            input_names[i], got, (long long)b->c);
        }
    if (nout > 1 && !b->training)
        return d5_error(D5_ERR_INVALID, OP " (dnnl): running_mean and running_var are outputs "
                                           "only in training mode (training_mode=1)");
    return D5_OK;
}

/* A forward primitive descriptor of the given kind on X in layout b->data_in. */
static dnnl_status_t try_forward_pd(dbn *b, dnnl_prop_kind_t kind, dnnl_primitive_desc_t *pd)
{
    dnnl_batch_normalization_desc_t d;
    dnnl_status_t st = dnnl_batch_normalization_forward_desc_init(&d, kind, &b->data_in,
                                                                  (float)b->epsilon, b->flags);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(pd, &d, NULL, b->ctx.engine, NULL);
    return st;
}

static d5_status forward_pd(dbn *b, dnnl_prop_kind_t kind, dnnl_primitive_desc_t *pd)
{
    return d5__dnnl_check(try_forward_pd(b, kind, pd), OP, "forward primitive descriptor");
}

/* Picks the layout of X: a normalization primitive cannot choose it ("any"),
 * and on the plain layout oneDNN 2.6 has only a C++ kernel. The first
 * channel-blocked or channels-last layout with a jit kernel wins (on AVX2,
 * blocks of 8 channels: several times faster than the plain layout, reorders
 * included); otherwise X stays plain. Sets b->data_in and b->fwd_pd. */
static d5_status choose_layout(dbn *b, dnnl_prop_kind_t kind)
{
    static const dnnl_format_tag_t tags[2][3] = {{dnnl_aBcd16b, dnnl_aBcd8b, dnnl_acdb},
                                                 {dnnl_aBcde16b, dnnl_aBcde8b, dnnl_acdeb}};
    for (int t = 0; t < 3; t++) {
        const char *impl = NULL;
        if (dnnl_memory_desc_init_by_tag(&b->data_in, b->data_md.ndims, b->data_md.dims, dnnl_f32,
                                         tags[b->data_md.ndims - 4][t]) != dnnl_success)
            continue;
        if (try_forward_pd(b, kind, &b->fwd_pd) == dnnl_success &&
            dnnl_primitive_desc_query(b->fwd_pd, dnnl_query_impl_info_str, 0, &impl) ==
                dnnl_success &&
            impl && strstr(impl, "jit"))
            return D5_OK;
        if (b->fwd_pd) dnnl_primitive_desc_destroy(b->fwd_pd);
        b->fwd_pd = NULL;
    }
    b->data_in = b->data_md;
    return forward_pd(b, kind, &b->fwd_pd);
}

static d5_status create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        d5_tensor_desc *out, int32_t nout, void **state)
{
    dbn *b = d5_calloc(1, sizeof *b, OP " (dnnl)");
    if (!b) return D5_ERR_NOMEM;
    d5_status s = check(b, in, nin, attrs, nout);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&b->ctx, OP);
    const d5_tensor_desc *x = &in[0].desc;
    if (s == D5_OK) {
        /* oneDNN 2.6 has jit kernels for 4-d and 5-d data but only its
         * reference kernel for 3-d: other ranks are seen as N x C x inner x 1. */
        if (x->ndim == 4 || x->ndim == 5) {
            s = d5__dnnl_plain_md(&b->data_md, x->ndim, x->shape, OP);
        } else {
            int64_t dims[4] = {b->n, b->c, b->inner, 1};
            s = d5__dnnl_plain_md(&b->data_md, 4, dims, OP);
        }
    }
    if (s == D5_OK) s = d5__dnnl_plain_md(&b->ch_md, 1, &b->c, OP);
    b->flags = (unsigned)dnnl_use_scale | (unsigned)dnnl_use_shift;
    if (!b->training) b->flags |= (unsigned)dnnl_use_global_stats;
    if (s == D5_OK)
        s = choose_layout(b, b->training ? dnnl_forward_training : dnnl_forward_inference);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&b->fwd, b->fwd_pd), OP, "forward");
    if (s == D5_OK) s = d5__dnnl_arg_init(&b->a_src, &b->ctx, &b->data_md, &b->data_in, OP);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&b->a_dst, &b->ctx, &b->data_md, query(b->fwd_pd, dnnl_query_dst_md),
                              OP);
    dnnl_memory_t *ch[] = {&b->mean, &b->var, &b->scale, &b->shift, &b->diff_scale, &b->diff_shift};
    for (size_t i = 0; s == D5_OK && i < sizeof ch / sizeof ch[0]; i++)
        s = d5__dnnl_check(dnnl_memory_create(ch[i], &b->ch_md, b->ctx.engine, DNNL_MEMORY_NONE),
                           OP, "memory");
    if (s == D5_OK && b->training) {
        b->stats = d5_calloc((size_t)(2 * b->c) + 1, sizeof(float), OP " (dnnl) statistics");
        if (!b->stats) s = D5_ERR_NOMEM;
    }
    if (s != D5_OK) {
        destroy(b);
        return s;
    }
    out[0] = *x;
    for (int32_t k = 1; k < nout; k++) out[k] = in[2 + k].desc;
    *state = b;
    return D5_OK;
}

static d5_status bind(dnnl_memory_t m, const void *ptr)
{
    return d5__dnnl_check(dnnl_memory_set_data_handle(m, (void *)ptr), OP, "memory");
}

/* Runs the forward primitive on X already in `src` (the primitive's layout),
 * writing Y to `dst`; in training mode the batch statistics to b->stats. */
static d5_status run_forward(dbn *b, const d5_tensor *in, dnnl_memory_t src, dnnl_memory_t dst)
{
    const void *mean = b->training ? (const void *)b->stats : in[3].data;
    const void *var = b->training ? (const void *)(b->stats + b->c) : in[4].data;
    d5_status s = bind(b->mean, mean);
    if (s == D5_OK) s = bind(b->var, var);
    if (s == D5_OK) s = bind(b->scale, in[1].data);
    if (s == D5_OK) s = bind(b->shift, in[2].data);
    dnnl_exec_arg_t args[6] = {{DNNL_ARG_SRC, src},        {DNNL_ARG_DST, dst},
                               {DNNL_ARG_MEAN, b->mean},   {DNNL_ARG_VARIANCE, b->var},
                               {DNNL_ARG_SCALE, b->scale}, {DNNL_ARG_SHIFT, b->shift}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(b->fwd, b->ctx.stream, 6, args), OP, "forward");
    return s;
}

static d5_status forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                         int32_t nout)
{
    (void)nin;
    dbn *b = state;
    dnnl_memory_t src, dst;
    d5_status s = d5__dnnl_arg_in(&b->a_src, &b->ctx, in[0].data, &src, OP);
    if (s == D5_OK) s = d5__dnnl_arg_out(&b->a_dst, out[0].data, &dst);
    if (s == D5_OK) s = run_forward(b, in, src, dst);
    if (s == D5_OK) s = d5__dnnl_arg_finish(&b->a_dst, &b->ctx, OP);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(b->ctx.stream), OP, "stream");
    if (s != D5_OK || !b->training) return s;
    const float *im = in[3].data, *iv = in[4].data;
    double mom = b->momentum;
    for (int64_t ch = 0; ch < b->c; ch++) {
        if (nout > 1) ((float *)out[1].data)[ch] = (float)(im[ch] * mom + b->stats[ch] * (1 - mom));
        if (nout > 2)
            ((float *)out[2].data)[ch] = (float)(iv[ch] * mom + b->stats[b->c + ch] * (1 - mom));
    }
    return D5_OK;
}

static d5_status build_backward(dbn *b)
{
    dnnl_primitive_desc_t hint = b->fwd_pd, own = NULL, pd = NULL;
    d5_status s = D5_OK;
    if (!b->training) { /* the hint of a backward is a forward_training descriptor */
        s = forward_pd(b, dnnl_forward_training, &own);
        hint = own;
    }
    dnnl_memory_desc_t diff_any;
    dnnl_batch_normalization_desc_t d;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_desc_init_by_tag(&diff_any, b->data_md.ndims,
                                                        b->data_md.dims, dnnl_f32,
                                                        dnnl_format_tag_any),
                           OP, "memory descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_batch_normalization_backward_desc_init(&d, dnnl_backward, &diff_any,
                                                                       &b->data_in,
                                                                       (float)b->epsilon, b->flags),
                           OP, "backward descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &d, NULL, b->ctx.engine, hint), OP,
                           "backward primitive descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&b->bwd, pd), OP, "backward");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&b->a_diff_dst, &b->ctx, &b->data_md,
                              query(pd, dnnl_query_diff_dst_md), OP);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&b->a_diff_src, &b->ctx, &b->data_md,
                              query(pd, dnnl_query_diff_src_md), OP);
    if (s == D5_OK && b->training)
        s = d5__dnnl_check(dnnl_memory_create(&b->ymem, query(b->fwd_pd, dnnl_query_dst_md),
                                              b->ctx.engine, DNNL_MEMORY_ALLOCATE),
                           OP, "recomputed output");
    if (own) dnnl_primitive_desc_destroy(own);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (s == D5_OK) {
        b->chbuf = d5_alloc((size_t)(2 * b->c + 1) * sizeof(float), OP " (dnnl) gradients");
        if (!b->chbuf) s = D5_ERR_NOMEM;
    }
    if (s != D5_OK) { /* leave no half-built backward behind: the next call retries */
        if (b->bwd) dnnl_primitive_destroy(b->bwd);
        if (b->ymem) dnnl_memory_destroy(b->ymem);
        d5__dnnl_arg_free(&b->a_diff_dst);
        d5__dnnl_arg_free(&b->a_diff_src);
        d5_free(b->chbuf);
        b->bwd = NULL;
        b->ymem = NULL;
        b->chbuf = NULL;
    }
    return s;
}

/* The primitive part of backward: dX into dx, dscale and dB. */
static d5_status run_backward(dbn *b, const d5_tensor *in, const float *dy, float *dx,
                              float *dscale, float *dshift)
{
    dnnl_memory_t src = NULL, ddst = NULL, dsrc = NULL;
    d5_status s = d5__dnnl_arg_in(&b->a_src, &b->ctx, in[0].data, &src, OP);
    if (s == D5_OK && b->training) s = run_forward(b, in, src, b->ymem); /* batch statistics */
    if (s == D5_OK) s = bind(b->mean, b->training ? (const void *)b->stats : in[3].data);
    if (s == D5_OK) s = bind(b->var, b->training ? (const void *)(b->stats + b->c) : in[4].data);
    if (s == D5_OK) s = bind(b->scale, in[1].data);
    if (s == D5_OK) s = bind(b->shift, in[2].data); /* unused, but oneDNN asks for it */
    if (s == D5_OK) s = bind(b->diff_scale, dscale);
    if (s == D5_OK) s = bind(b->diff_shift, dshift);
    if (s == D5_OK) s = d5__dnnl_arg_in(&b->a_diff_dst, &b->ctx, dy, &ddst, OP);
    if (s == D5_OK) s = d5__dnnl_arg_out(&b->a_diff_src, dx, &dsrc);
    dnnl_exec_arg_t args[9] = {{DNNL_ARG_SRC, src},
                               {DNNL_ARG_MEAN, b->mean},
                               {DNNL_ARG_VARIANCE, b->var},
                               {DNNL_ARG_SCALE, b->scale},
                               {DNNL_ARG_SHIFT, b->shift},
                               {DNNL_ARG_DIFF_DST, ddst},
                               {DNNL_ARG_DIFF_SRC, dsrc},
                               {DNNL_ARG_DIFF_SCALE, b->diff_scale},
                               {DNNL_ARG_DIFF_SHIFT, b->diff_shift}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(b->bwd, b->ctx.stream, 9, args), OP, "backward");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&b->a_diff_src, &b->ctx, OP);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(b->ctx.stream), OP, "stream");
    return s;
}

static d5_status backward(void *state, const d5_tensor *gout, int32_t nout, const d5_tensor *in,
                          int32_t nin, const d5_tensor *out, d5_tensor *gin)
{
    (void)nin;
    (void)out;
    dbn *b = state;
    const int64_t C = b->c;
    d5_status s = b->bwd ? D5_OK : build_backward(b);
    if (s != D5_OK) return s;
    /* Scratch for what the caller does not want, and zeros for a missing dY. */
    float *dx = gin[0].data, *dx_scratch = NULL, *dy_zero = NULL;
    const float *dy = gout[0].data;
    if (!dx) dx = dx_scratch = d5_alloc((size_t)(b->numel + 1) * sizeof(float), OP " gradient");
    if (!dy) dy = dy_zero = d5_calloc((size_t)b->numel + 1, sizeof(float), OP " gradient");
    float *dscale = gin[1].data ? (float *)gin[1].data : b->chbuf;
    float *dshift = gin[2].data ? (float *)gin[2].data : b->chbuf + C;
    s = dx && dy ? run_backward(b, in, dy, dx, dscale, dshift) : D5_ERR_NOMEM;
    d5_free(dx_scratch);
    d5_free(dy_zero);
    if (s != D5_OK) return s;

    float *dmean = gin[3].data, *dvar = gin[4].data;
    if (!b->training) {
        const float *scale = in[1].data, *var = in[4].data;
        for (int64_t ch = 0; ch < C; ch++) {
            double inv = 1 / sqrt((double)var[ch] + b->epsilon);
            if (dmean) dmean[ch] = (float)(-(double)scale[ch] * dshift[ch] * inv);
            if (dvar) dvar[ch] = (float)(-0.5 * scale[ch] * dscale[ch] * inv * inv);
        }
        return D5_OK;
    }
    const float *drm = nout > 1 ? gout[1].data : NULL, *drv = nout > 2 ? gout[2].data : NULL;
    double mom = b->momentum, m = (double)(b->n * b->inner);
    for (int64_t ch = 0; ch < C; ch++) {
        if (dmean) dmean[ch] = drm ? (float)(mom * drm[ch]) : 0.f;
        if (dvar) dvar[ch] = drv ? (float)(mom * drv[ch]) : 0.f;
    }
    if (!gin[0].data || (!drm && !drv)) return D5_OK;
    const float *x = in[0].data, *mean = b->stats;
    float *gx = gin[0].data;
    for (int64_t k = 0; k < b->n; k++)
        for (int64_t ch = 0; ch < C; ch++) {
            double a = drm ? (1 - mom) * drm[ch] / m : 0, r = drv ? 2 * (1 - mom) * drv[ch] / m : 0;
            double mu = mean[ch];
            int64_t base = (k * C + ch) * b->inner;
            for (int64_t i = 0; i < b->inner; i++)
                gx[base + i] += (float)(a + r * (x[base + i] - mu));
        }
    return D5_OK;
}

/* Normalising and scaling: 4 operations per element; the batch statistics in
 * training mode: 4 more. Bytes: X read, Y written, the per-channel vectors. */
static void cost(void *state, double *flops, double *bytes)
{
    const dbn *b = state;
    *flops = (b->training ? 8.0 : 4.0) * (double)b->numel;
    *bytes = 4.0 * (2.0 * (double)b->numel + 6.0 * (double)b->c);
}

const d5_op_desc d5__op_dnnl_BatchNormalization = {
    D5_OP_ABI_VERSION, D5_OP_HAS_BACKWARD, OP,      "dnnl", 5, 5, 1, 3, create,
    forward,           backward,           destroy, cost};
