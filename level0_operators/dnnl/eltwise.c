/* Element-wise activations on oneDNN's eltwise primitives, float32: Relu,
 * LeakyRelu (alpha, default 0.01), Elu (alpha, default 1.0), Sigmoid
 * (logistic), Tanh, Softplus (soft_relu), Exp, Log, Sqrt and Abs, with the
 * semantics of the ref operators (see ref/<name>.c). The tensor is seen as one
 * dense 1-d array, so any rank (0 to D5_MAX_DIMS) works; the primitives take
 * the caller's memory directly, with no reorders.
 *
 * forward: dnnl_eltwise_forward; backward: dnnl_eltwise_backward from the
 * input X (not the "use_dst_for_bwd" variants), built on first use with the
 * forward primitive as its hint. oneDNN's gradient of LeakyRelu and Elu at
 * exactly X = 0 is alpha where the ref operators (and the one-sided slope from
 * the right) give 1: a pass after the primitive sets those elements to dY. */
#include "dnnl_util.h"
#include "kernels.h"

typedef struct eltwise_kind {
    const char *name;
    dnnl_alg_kind_t alg;
    int has_alpha;        /* reads the float attribute alpha */
    double alpha_default; /* its default */
    int one_at_zero;      /* ref's gradient at X = 0 is 1, oneDNN's alpha */
} eltwise_kind;

typedef struct delt {
    const eltwise_kind *k;
    float alpha;
    int64_t numel;
    d5_dnnl_ctx ctx;
    dnnl_memory_desc_t md; /* numel floats, 1-d */
    dnnl_primitive_desc_t fwd_pd;
    dnnl_primitive_t fwd, bwd; /* bwd built on first use */
    dnnl_memory_t src, dst, diff_dst, diff_src;
} delt;

static void destroy(void *state)
{
    delt *e = state;
    if (!e) return;
    dnnl_memory_t mems[] = {e->src, e->dst, e->diff_dst, e->diff_src};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (e->fwd) dnnl_primitive_destroy(e->fwd);
    if (e->bwd) dnnl_primitive_destroy(e->bwd);
    if (e->fwd_pd) dnnl_primitive_desc_destroy(e->fwd_pd);
    d5__dnnl_ctx_free(&e->ctx);
    d5_free(e);
}

static d5_status memory(delt *e, dnnl_memory_t *m)
{
    return d5__dnnl_check(dnnl_memory_create(m, &e->md, e->ctx.engine, DNNL_MEMORY_NONE),
                          e->k->name, "memory");
}

static d5_status eltwise_create(const eltwise_kind *k, const d5_tensor *in, const d5_attrs *attrs,
                                d5_tensor_desc *out, void **state)
{
    if (in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): input 0 is %s; float32 only", k->name,
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    double alpha = 0;
    if (k->has_alpha) {
        d5_status s = d5_attrs_float(attrs, "alpha", k->alpha_default, &alpha);
        if (s != D5_OK) return d5_error(s, "%s (dnnl): attribute alpha must be a float", k->name);
    }
    delt *e = d5_calloc(1, sizeof *e, k->name);
    if (!e) return D5_ERR_NOMEM;
    e->k = k;
    e->alpha = (float)alpha;
    e->numel = d5_tensor_desc_numel(&in[0].desc);
    d5_status s = d5__dnnl_ctx_create(&e->ctx, k->name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&e->md, 1, &e->numel, k->name);
    dnnl_eltwise_desc_t ed;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_training, k->alg,
                                                          &e->md, e->alpha, 0.f),
                           k->name, "forward descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&e->fwd_pd, &ed, NULL, e->ctx.engine, NULL),
                           k->name, "forward primitive descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_create(&e->fwd, e->fwd_pd), k->name, "forward");
    if (s == D5_OK) s = memory(e, &e->src);
    if (s == D5_OK) s = memory(e, &e->dst);
    if (s != D5_OK) {
        destroy(e);
        return s;
    }
    out[0] = in[0].desc;
    *state = e;
    return D5_OK;
}

static d5_status bind(delt *e, dnnl_memory_t m, const void *ptr)
{
    return d5__dnnl_check(dnnl_memory_set_data_handle(m, (void *)ptr), e->k->name, "memory");
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    delt *e = state;
    if (e->numel == 0) return D5_OK;
    d5_status s = bind(e, e->src, in[0].data);
    if (s == D5_OK) s = bind(e, e->dst, out[0].data);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_DST, e->dst}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(e->fwd, e->ctx.stream, 2, args), e->k->name,
                           "forward");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(e->ctx.stream), e->k->name, "stream");
    return s;
}

static d5_status build_backward(delt *e)
{
    dnnl_eltwise_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    d5_status s = d5__dnnl_check(
        dnnl_eltwise_backward_desc_init(&bd, e->k->alg, &e->md, &e->md, e->alpha, 0.f), e->k->name,
        "backward descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &bd, NULL, e->ctx.engine, e->fwd_pd),
                           e->k->name, "backward primitive descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&e->bwd, pd), e->k->name, "backward");
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (s == D5_OK) s = memory(e, &e->diff_dst);
    if (s == D5_OK) s = memory(e, &e->diff_src);
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    delt *e = state;
    float *dx = e->numel ? d5__dnnl_grad_begin(call, e->numel) : NULL;
    if (!dx) return D5_OK;
    d5_status s = e->bwd ? D5_OK : build_backward(e);
    if (s == D5_OK) s = bind(e, e->src, in[0].data);
    if (s == D5_OK) s = bind(e, e->diff_dst, gout[0].data);
    if (s == D5_OK) s = bind(e, e->diff_src, dx);
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, e->src}, {DNNL_ARG_DIFF_DST, e->diff_dst}, {DNNL_ARG_DIFF_SRC, e->diff_src}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(e->bwd, e->ctx.stream, 3, args), e->k->name,
                           "backward");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(e->ctx.stream), e->k->name, "stream");
    if (s == D5_OK && e->k->one_at_zero && e->alpha != 1.f) {
        const float *x = in[0].data, *dy = gout[0].data;
        for (int64_t i = 0; i < e->numel; i++)
            if (x[i] == 0.f) dx[i] = dy[i];
    }
    return s;
}

/* One operation per element; X read and Y written. */
static void cost(void *state, double *flops, double *bytes)
{
    const delt *e = state;
    *flops = (double)e->numel;
    *bytes = 8.0 * (double)e->numel;
}

#define ELTWISE_OPERATOR(NAME, ALG, HAS_ALPHA, ALPHA, ONE_AT_ZERO)                                 \
    static const eltwise_kind kind_##NAME = {#NAME, ALG, HAS_ALPHA, ALPHA, ONE_AT_ZERO};           \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return eltwise_create(&kind_##NAME, args->inputs, args->attrs, args->outputs, state);      \
    }                                                                                              \
    const d5_op_desc d5__op_dnnl_##NAME = {.abi_version = D5_OP_ABI_VERSION,                       \
                                           .flags = D5_OP_HAS_BACKWARD,                            \
                                           .name = #NAME,                                          \
                                           .backend = "dnnl",                                      \
                                           .min_inputs = 1,                                        \
                                           .max_inputs = 1,                                        \
                                           .min_outputs = 1,                                       \
                                           .max_outputs = 1,                                       \
                                           .create = create_##NAME,                                \
                                           .forward = forward,                                     \
                                           .backward = backward,                                   \
                                           .destroy = destroy,                                     \
                                           .cost = cost}

ELTWISE_OPERATOR(Relu, dnnl_eltwise_relu, 0, 0.0, 0);
ELTWISE_OPERATOR(LeakyRelu, dnnl_eltwise_relu, 1, 0.01, 1);
ELTWISE_OPERATOR(Elu, dnnl_eltwise_elu, 1, 1.0, 1);
ELTWISE_OPERATOR(Sigmoid, dnnl_eltwise_logistic, 0, 0.0, 0);
ELTWISE_OPERATOR(Tanh, dnnl_eltwise_tanh, 0, 0.0, 0);
ELTWISE_OPERATOR(Softplus, dnnl_eltwise_soft_relu, 0, 0.0, 0);
ELTWISE_OPERATOR(Exp, dnnl_eltwise_exp, 0, 0.0, 0);
ELTWISE_OPERATOR(Log, dnnl_eltwise_log, 0, 0.0, 0);
ELTWISE_OPERATOR(Sqrt, dnnl_eltwise_sqrt, 0, 0.0, 0);
ELTWISE_OPERATOR(Abs, dnnl_eltwise_abs, 0, 0.0, 0);
