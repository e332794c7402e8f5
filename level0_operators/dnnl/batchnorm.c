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
 * needs as inputs: backward computes them from the X it is given (so backward
 * stays a function of its arguments) in one pass of C over X (batch_stats),
 * not with the forward primitive, which would also write a Y nobody reads;
 * the running outputs' gradients add (1 - momentum) * (dRM + 2 (X - mean) dRV)
 * / M to dX (M elements per channel) and momentum * dRM, momentum * dRV to
 * input_mean and input_var.
 *
 * X of rank 2, 3 or 6 to 8 is handed to oneDNN as N x C x (D1 * ... * Dn) x 1,
 * the same memory. X, Y and their gradients are in ONNX's plain layout for the
 * caller and are reordered around each call into the layout of the fastest
 * kernel (see choose_layout), so the time measured is the time an NCHW caller
 * sees; D5_ATTR_BLOCKED (the executor's layout propagation, 4-d X only) puts
 * X and dX (D5_BLOCKED_X), Y and dY (D5_BLOCKED_Y) in oneDNN's blocked layout
 * instead (nChw16c, or nChw8c without AVX-512), which the primitives then read
 * and write directly. https://onnx.ai/onnx/operators/onnx__BatchNormalization.html */
#include "dnnl_util.h"
#include "kernels.h"

#include <math.h>
#include <string.h>

#define OP "BatchNormalization"

/* The batch statistics are summed in units of a group of images and a block
 * of channels, at least this many units where the batch allows: a fixed
 * split, so that the sums do not depend on the number of threads. */
#define STAT_UNITS 64
/* Lanes of the statistics loop: a multiple of every channel block (1, 8, 16),
 * so that a lane holds one channel; 32 independent sums keep the additions'
 * latency hidden. */
#define LANES 32

typedef struct dbn {
    int64_t n, c, inner, numel; /* X seen as n x c x inner */
    double epsilon, momentum;
    int training;
    unsigned flags;
    int64_t blocked; /* D5_BLOCKED_* bits of D5_ATTR_BLOCKED */
    int64_t xblock;  /* channels a block in X's and dX's layout: 1 when plain */
    int64_t groups;  /* training: image groups of the statistics pass */
    d5_dnnl_ctx ctx;
    /* X plain; X and dX, Y and dY as the caller holds them (data_md, or
     * blocked with D5_ATTR_BLOCKED); X as the primitives read it; one value
     * per channel. */
    dnnl_memory_desc_t data_md, x_md, y_md, data_in, ch_md;
    dnnl_primitive_desc_t fwd_pd; /* forward_training in training mode */
    dnnl_primitive_t fwd, bwd;    /* bwd built on first use */
    d5_dnnl_arg a_src, a_dst, a_diff_dst, a_diff_src;
    dnnl_memory_t mean, var, scale, shift, diff_scale, diff_shift; /* plain [c] */
    float *stats; /* training: batch mean [c] and variance [c] */
    double *sums; /* training backward: [groups][c] shifted sums, then squares */
    float *chbuf; /* backward: dscale and dB when the caller does not want them */
} dbn;

static const char *const input_names[5] = {"X", "scale", "B", "input_mean", "input_var"};

static void destroy(void *state)
{
    dbn *b = state;
    if (!b) return;
    d5_dnnl_arg *args[] = {&b->a_src, &b->a_dst, &b->a_diff_dst, &b->a_diff_src};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) d5__dnnl_arg_free(args[i]);
    dnnl_memory_t mems[] = {b->mean, b->var, b->scale, b->shift, b->diff_scale, b->diff_shift};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (b->fwd) dnnl_primitive_destroy(b->fwd);
    if (b->bwd) dnnl_primitive_destroy(b->bwd);
    if (b->fwd_pd) dnnl_primitive_desc_destroy(b->fwd_pd);
    d5_free(b->stats);
    d5_free(b->sums);
    d5_free(b->chbuf);
    d5__dnnl_ctx_free(&b->ctx);
    d5_free(b);
}

static const dnnl_memory_desc_t *query(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

/* Checks inputs and attributes the way the ref operator does; fills b. */
static d5_status check(dbn *b, const d5_op_create_args *args)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
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
    if (args->noutputs > 1 && !b->training)
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

/* The caller's layouts under D5_ATTR_BLOCKED (b->blocked): sets b->x_md,
 * b->y_md and b->xblock; D5_ERR_UNSUPPORTED where the layout cannot be taken. */
static d5_status caller_layouts(dbn *b, const d5_tensor_desc *x)
{
    b->x_md = b->y_md = b->data_md;
    b->xblock = 1;
    if (!b->blocked) return D5_OK;
    if (b->blocked & ~(int64_t)(D5_BLOCKED_X | D5_BLOCKED_Y | D5_BLOCKED_BACKWARD))
        return d5_error(D5_ERR_UNSUPPORTED,
                        OP " (dnnl): %s = %lld; only X (%d) and Y (%d) can be blocked",
                        D5_ATTR_BLOCKED, (long long)b->blocked, D5_BLOCKED_X, D5_BLOCKED_Y);
    if (x->ndim != 4)
        return d5_error(D5_ERR_UNSUPPORTED,
                        OP " (dnnl): the blocked layout is for 4-d X (N x C x H x W), not %d-d",
                        (int)x->ndim);
    d5_status s = D5_OK;
    if (b->blocked & D5_BLOCKED_X) s = d5__dnnl_blocked_md(&b->x_md, x->shape, b->c, OP);
    if (s == D5_OK && (b->blocked & D5_BLOCKED_Y))
        s = d5__dnnl_blocked_md(&b->y_md, x->shape, b->c, OP);
    if (s == D5_OK && (b->blocked & D5_BLOCKED_X))
        b->xblock = b->x_md.format_desc.blocking.inner_blks[0];
    if (s == D5_OK && LANES % b->xblock != 0) /* batch_stats' lanes hold one channel each */
        s = d5_error(D5_ERR_UNSUPPORTED, OP " (dnnl): blocks of %lld channels; 1, 8 or 16 expected",
                     (long long)b->xblock);
    return s;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    dbn *b = d5_calloc(1, sizeof *b, OP " (dnnl)");
    if (!b) return D5_ERR_NOMEM;
    d5_status s = d5_attrs_int(args->attrs, D5_ATTR_BLOCKED, 0, &b->blocked);
    if (s == D5_OK) s = check(b, args);
    if (s == D5_OK) s = d5__dnnl_ctx_create(&b->ctx, OP);
    const d5_tensor_desc *x = &args->inputs[0].desc;
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
    if (s == D5_OK) s = caller_layouts(b, x);
    b->flags = (unsigned)dnnl_use_scale | (unsigned)dnnl_use_shift;
    if (!b->training) b->flags |= (unsigned)dnnl_use_global_stats;
    dnnl_prop_kind_t kind = b->training ? dnnl_forward_training : dnnl_forward_inference;
    if (s == D5_OK && (b->blocked & D5_BLOCKED_X)) { /* read as given */
        b->data_in = b->x_md;
        s = forward_pd(b, kind, &b->fwd_pd);
    } else if (s == D5_OK) {
        s = choose_layout(b, kind);
    }
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&b->fwd, b->fwd_pd), OP, "forward");
    if (s == D5_OK) s = d5__dnnl_arg_init(&b->a_src, &b->ctx, &b->x_md, &b->data_in, OP);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&b->a_dst, &b->ctx, &b->y_md, query(b->fwd_pd, dnnl_query_dst_md),
                              OP);
    dnnl_memory_t *ch[] = {&b->mean, &b->var, &b->scale, &b->shift, &b->diff_scale, &b->diff_shift};
    for (size_t i = 0; s == D5_OK && i < sizeof ch / sizeof ch[0]; i++)
        s = d5__dnnl_check(dnnl_memory_create(ch[i], &b->ch_md, b->ctx.engine, DNNL_MEMORY_NONE),
                           OP, "memory");
    if (s == D5_OK && b->training) {
        b->stats = d5_calloc((size_t)(2 * b->c) + 1, sizeof(float), OP " (dnnl) statistics");
        if (!b->stats) s = D5_ERR_NOMEM;
    }
    if (s == D5_OK && b->training) { /* enough units for the threads, where the batch allows */
        int64_t blocks = b->c / b->xblock;
        b->groups = (STAT_UNITS + blocks - 1) / blocks;
        if (b->groups > b->n) b->groups = b->n;
        if (b->groups < 1) b->groups = 1;
        b->sums =
            d5_alloc((size_t)(2 * b->groups * b->c) * sizeof(double) + 1, OP " (dnnl) statistics");
        if (!b->sums) s = D5_ERR_NOMEM;
    }
    if (s != D5_OK) {
        destroy(b);
        return s;
    }
    /* Y like X; the running mean and variance like the inputs they update. */
    d5_tensor_desc *out = args->outputs;
    out[0] = *x;
    for (int32_t k = 1; k < args->noutputs; k++) out[k] = args->inputs[2 + k].desc;
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

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    int32_t nout = call->noutputs;
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
        s = d5__dnnl_arg_init(&b->a_diff_dst, &b->ctx, &b->y_md, query(pd, dnnl_query_diff_dst_md),
                              OP);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&b->a_diff_src, &b->ctx, &b->x_md, query(pd, dnnl_query_diff_src_md),
                              OP);
    if (own) dnnl_primitive_desc_destroy(own);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (s == D5_OK) {
        b->chbuf = d5_alloc((size_t)(2 * b->c + 1) * sizeof(float), OP " (dnnl) gradients");
        if (!b->chbuf) s = D5_ERR_NOMEM;
    }
    if (s != D5_OK) { /* leave no half-built backward behind: the next call retries */
        if (b->bwd) dnnl_primitive_destroy(b->bwd);
        d5__dnnl_arg_free(&b->a_diff_dst);
        d5__dnnl_arg_free(&b->a_diff_src);
        d5_free(b->chbuf);
        b->bwd = NULL;
        b->chbuf = NULL;
    }
    return s;
}

/* Element (k, ch, i) of X seen as n x c x inner, in a layout with `block`
 * channels a block (1: plain) is at ((k * c / block + ch / block) * inner + i)
 * * block + ch % block. The statistics pass and the running-statistics
 * correction walk X in that order: for each image and block of channels, a
 * contiguous span of inner * block values. */

/* Adds `rows` spans p[0, len), p[stride, stride + len), ... to the lane sums
 * s1 (of p - shift) and s2 (of its squares), value t of a span in lane
 * t % LANES. The sums live in locals while the loop runs, so that the
 * compiler keeps them in vector registers. */
#define SPAN_SUMS_BODY                                                                             \
    {                                                                                              \
        double a[LANES], q[LANES], k[LANES];                                                       \
        for (int l = 0; l < LANES; l++) {                                                          \
            a[l] = q[l] = 0;                                                                       \
            k[l] = shift[l];                                                                       \
        }                                                                                          \
        for (int64_t r = 0; r < rows; r++, p += stride) {                                          \
            int64_t t = 0;                                                                         \
            for (; t + LANES <= len; t += LANES)                                                   \
                for (int l = 0; l < LANES; l++) {                                                  \
                    double d = (double)p[t + l] - k[l];                                            \
                    a[l] += d;                                                                     \
                    q[l] += d * d;                                                                 \
                }                                                                                  \
            for (int l = 0; t + l < len; l++) {                                                    \
                double d = (double)p[t + l] - k[l];                                                \
                a[l] += d;                                                                         \
                q[l] += d * d;                                                                     \
            }                                                                                      \
        }                                                                                          \
        for (int l = 0; l < LANES; l++) {                                                          \
            s1[l] += a[l];                                                                         \
            s2[l] += q[l];                                                                         \
        }                                                                                          \
    }

static void span_sums_generic(const float *p, int64_t rows, int64_t stride, int64_t len,
                              const double *shift, double *s1, double *s2) SPAN_SUMS_BODY

#if defined(__GNUC__) && defined(__x86_64__)
    /* The same loop compiled for AVX2 (registers twice as wide as SSE2's),
     * chosen at run time where the CPU has it. */
    __attribute__((target("avx2"))) static void span_sums_avx2(const float *p, int64_t rows,
                                                               int64_t stride, int64_t len,
                                                               const double *shift, double *s1,
                                                               double *s2) SPAN_SUMS_BODY
#endif

    typedef void (*span_sums_fn)(const float *, int64_t, int64_t, int64_t, const double *, double *,
                                 double *);

static span_sums_fn pick_span_sums(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) return span_sums_avx2;
#endif
    return span_sums_generic;
}

/* The batch mean and biased variance of each channel of x (in X's layout)
 * into b->stats, summed in double. The sums are taken about a value of the
 * channel (its first), which keeps the variance accurate when the mean is
 * large against the spread. Units of (image group, channel block) run in
 * parallel on oneDNN's OpenMP threads where d5 is built with OpenMP; the
 * groups are then added in order. */
static void batch_stats(dbn *b, const float *x)
{
    const int64_t C = b->c, B = b->xblock, blocks = C / B, G = b->groups, span = b->inner * B;
    double *sum = b->sums, *sq = b->sums + G * C;
    span_sums_fn span_sums = pick_span_sums();
    if (b->numel == 0) { /* no values to read */
        memset(b->stats, 0, (size_t)(2 * C) * sizeof *b->stats);
        return;
    }
    D5_PARALLEL_FOR
    for (int64_t u = 0; u < G * blocks; u++) {
        int64_t g = u / blocks, cb = u % blocks;
        int64_t k0 = b->n * g / G, k1 = b->n * (g + 1) / G;
        double shift[LANES], s1[LANES] = {0}, s2[LANES] = {0};
        for (int l = 0; l < LANES; l++) shift[l] = x[cb * span + l % B];
        span_sums(x + (k0 * blocks + cb) * span, k1 - k0, blocks * span, span, shift, s1, s2);
        for (int64_t j = 0; j < B; j++) sum[g * C + cb * B + j] = sq[g * C + cb * B + j] = 0;
        for (int l = 0; l < LANES; l++) {
            sum[g * C + cb * B + l % B] += s1[l];
            sq[g * C + cb * B + l % B] += s2[l];
        }
    }
    double m = (double)(b->n * b->inner);
    for (int64_t ch = 0; ch < C; ch++) {
        double s1 = 0, s2 = 0;
        for (int64_t g = 0; g < G; g++) {
            s1 += sum[g * C + ch];
            s2 += sq[g * C + ch];
        }
        double mean = m > 0 ? s1 / m : 0, var = m > 0 ? (s2 - s1 * mean) / m : 0;
        int64_t first = (ch / B) * span + ch % B;
        b->stats[ch] = (float)(m > 0 ? x[first] + mean : 0);
        b->stats[C + ch] = (float)(var > 0 ? var : 0);
    }
}

/* The primitive part of backward: dX into dx, dscale and dB. */
static d5_status run_backward(dbn *b, const d5_tensor *in, const float *dy, float *dx,
                              float *dscale, float *dshift)
{
    dnnl_memory_t src = NULL, ddst = NULL, dsrc = NULL;
    if (b->training) batch_stats(b, in[0].data);
    d5_status s = d5__dnnl_arg_in(&b->a_src, &b->ctx, in[0].data, &src, OP);
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

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    int32_t nout = call->noutputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
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
    /* X and dX share a layout: walk both in it (see batch_stats). */
    const float *x = in[0].data, *mean = b->stats;
    float *gx = gin[0].data;
    const int64_t B = b->xblock, blocks = C / B;
    double *a = b->sums, *r = b->sums + C; /* free after batch_stats */
    for (int64_t ch = 0; ch < C; ch++) {
        a[ch] = drm ? (1 - mom) * drm[ch] / m : 0;
        r[ch] = drv ? 2 * (1 - mom) * drv[ch] / m : 0;
    }
    D5_PARALLEL_FOR
    for (int64_t u = 0; u < b->n * blocks; u++) {
        const int64_t c0 = (u % blocks) * B, base = u * b->inner * B;
        for (int64_t i = 0; i < b->inner; i++)
            for (int64_t j = 0; j < B; j++) {
                int64_t e = base + i * B + j;
                gx[e] += (float)(a[c0 + j] + r[c0 + j] * (x[e] - mean[c0 + j]));
            }
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

/* It takes the blocked layout. */
#define FLAGS (D5_OP_HAS_BACKWARD | D5_OP_BLOCKED_LAYOUT)

/* clang-format off */
const d5_op_desc d5__op_dnnl_BatchNormalization = {
    .abi_version = D5_OP_ABI_VERSION, .flags = FLAGS, .name = OP, .backend = "dnnl",
    .min_inputs = 5, .max_inputs = 5, .min_outputs = 1, .max_outputs = 3, .create = create,
    .forward = forward, .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
