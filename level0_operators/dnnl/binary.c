/* Add, Sub, Mul and Div (ONNX opsets 7-14) on oneDNN's binary primitive,
 * float32, with numpy broadcasting where oneDNN has it: the output has the
 * first operand's shape and the second broadcasts into it (dimensions equal or
 * 1, aligned from the right). A first operand that broadcasts is swapped with
 * the second for Add and Mul and declined for Sub and Div, which the ref
 * backend then runs. The primitive takes the caller's plain memory: no
 * reorders.
 *
 * Backward: the gradient of each operand is the output's gradient (negated
 * for Sub's second operand; times the other operand for Mul; divided by B,
 * and -A / B^2 for B, for Div), summed over the dimensions that operand was
 * broadcast along.
 * https://onnx.ai/onnx/operators/onnx__Add.html */
#include "dnnl_util.h"
#include "kernels.h"

#include <string.h>

typedef struct dbin {
    const char *name;
    d5_dnnl_ctx ctx;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
    int swapped;
    int32_t ndim;
    int64_t out[D5_MAX_DIMS], shape[2][D5_MAX_DIMS]; /* operands padded to ndim */
} dbin;

static void destroy(void *state)
{
    dbin *d = state;
    if (!d) return;
    dnnl_memory_t mems[] = {d->a, d->b, d->c};
    for (size_t i = 0; i < 3; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    if (d->prim) dnnl_primitive_destroy(d->prim);
    d5__dnnl_ctx_free(&d->ctx);
    d5_free(d);
}

/* Pads a shape with leading 1s to ndim. */
static void pad(const d5_tensor_desc *t, int32_t ndim, int64_t *shape)
{
    int32_t off = ndim - t->ndim;
    for (int32_t i = 0; i < ndim; i++) shape[i] = i < off ? 1 : t->shape[i - off];
}

/* 1 when `s` broadcasts into `full` (each dimension equal or 1). */
static int fits(const int64_t *s, const int64_t *full, int32_t ndim)
{
    for (int32_t i = 0; i < ndim; i++)
        if (s[i] != full[i] && s[i] != 1) return 0;
    return 1;
}

static d5_status binary_create(const char *name, dnnl_alg_kind_t alg, int commutative,
                               const d5_tensor *in, const d5_attrs *attrs, d5_tensor_desc *out,
                               void **state)
{
    int64_t opset = 19;
    d5_status s = d5_attrs_int(attrs, "__opset", 19, &opset);
    if (s != D5_OK) return s;
    if (opset < 7)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): opset %lld broadcasting is the ref "
                        "backend's",
                        name, (long long)opset);
    for (int i = 0; i < 2; i++)
        if (in[i].desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): input %d is %s; float32 only", name, i,
                            d5_dtype_name((d5_dtype)in[i].desc.dtype));
    int32_t ndim = in[0].desc.ndim > in[1].desc.ndim ? in[0].desc.ndim : in[1].desc.ndim;
    if (ndim == 0) ndim = 1;
    int64_t sa[D5_MAX_DIMS], sb[D5_MAX_DIMS];
    pad(&in[0].desc, ndim, sa);
    pad(&in[1].desc, ndim, sb);
    int swapped = 0;
    if (!fits(sb, sa, ndim)) {
        if (!commutative || !fits(sa, sb, ndim))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (dnnl): the first operand must have the output's shape", name);
        swapped = 1;
    }
    for (int32_t i = 0; i < ndim; i++)
        if (sa[i] == 0 || sb[i] == 0)
            return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): empty tensors are the ref backend's",
                            name);
    dbin *d = d5_calloc(1, sizeof *d, name);
    if (!d) return D5_ERR_NOMEM;
    d->name = name;
    d->ndim = ndim;
    d->swapped = swapped;
    memcpy(d->shape[0], sa, sizeof sa);
    memcpy(d->shape[1], sb, sizeof sb);
    memcpy(d->out, swapped ? sb : sa, sizeof sa);
    dnnl_memory_desc_t ma, mb, mc;
    s = d5__dnnl_ctx_create(&d->ctx, name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&ma, ndim, swapped ? sb : sa, name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&mb, ndim, swapped ? sa : sb, name);
    if (s == D5_OK) s = d5__dnnl_plain_md(&mc, ndim, d->out, name);
    dnnl_binary_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_binary_desc_init(&bd, alg, &ma, &mb, &mc), name, "descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(&pd, &bd, NULL, d->ctx.engine, NULL), name,
                           "primitive descriptor");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&d->prim, pd), name, "primitive");
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&d->a, &ma, d->ctx.engine, DNNL_MEMORY_NONE), name,
                           "memory");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&d->b, &mb, d->ctx.engine, DNNL_MEMORY_NONE), name,
                           "memory");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&d->c, &mc, d->ctx.engine, DNNL_MEMORY_NONE), name,
                           "memory");
    if (s != D5_OK) {
        destroy(d);
        return s;
    }
    /* The output keeps ONNX's rank: the larger of the two. */
    out[0].dtype = D5_F32;
    out[0].ndim = in[0].desc.ndim > in[1].desc.ndim ? in[0].desc.ndim : in[1].desc.ndim;
    for (int32_t i = 0; i < out[0].ndim; i++) out[0].shape[i] = d->out[ndim - out[0].ndim + i];
    *state = d;
    return D5_OK;
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    dbin *d = state;
    const d5_tensor *a = &in[d->swapped], *b = &in[!d->swapped];
    d5_status s = d5__dnnl_check(dnnl_memory_set_data_handle(d->a, a->data), d->name, "memory");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_set_data_handle(d->b, b->data), d->name, "memory");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_set_data_handle(d->c, out[0].data), d->name, "memory");
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC_0, d->a}, {DNNL_ARG_SRC_1, d->b}, {DNNL_ARG_DST, d->c}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(d->prim, d->ctx.stream, 3, args), d->name,
                           "forward");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(d->ctx.stream), d->name, "stream");
    return s;
}

/* g summed into the operand of padded shape `shape`, times `sign`. */
static void reduce_into(const dbin *d, const float *g, const int64_t *shape, float sign, float *dst)
{
    int64_t n = 1, m = 1;
    for (int32_t i = 0; i < d->ndim; i++) {
        n *= d->out[i];
        m *= shape[i];
    }
    if (n == m && sign == 1.0f) {
        if (dst != g) memcpy(dst, g, (size_t)n * sizeof *dst);
        return;
    }
    if (n == m) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= 1 << 16)
#endif
        for (int64_t i = 0; i < n; i++) dst[i] = sign * g[i];
        return;
    }
    memset(dst, 0, (size_t)m * sizeof *dst);
    int64_t idx[D5_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t k = 0;
        for (int32_t j = 0; j < d->ndim; j++) k = k * shape[j] + (shape[j] == 1 ? 0 : idx[j]);
        dst[k] += sign * g[i];
        for (int32_t j = d->ndim - 1; j >= 0 && ++idx[j] == d->out[j]; j--) idx[j] = 0;
    }
}

static d5_status add_sub_backward(void *state, const d5_op_call *call, float sign_b)
{
    const d5_tensor *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    dbin *d = state;
    for (int k = 0; k < 2; k++) {
        if (!gin[k].data) continue;
        /* shape[] holds the operands in their original order. */
        reduce_into(d, gout[0].data, d->shape[k], k == 1 ? sign_b : 1.0f, gin[k].data);
    }
    return D5_OK;
}

static d5_status add_backward(void *state, const d5_op_call *call)
{
    return add_sub_backward(state, call, 1.0f);
}

static d5_status sub_backward(void *state, const d5_op_call *call)
{
    return add_sub_backward(state, call, -1.0f);
}

/* x of padded shape `shape` broadcast into the output's shape: n floats. */
static void expand(const dbin *d, const float *x, const int64_t *shape, float *dst)
{
    int64_t n = 1, m = 1;
    for (int32_t i = 0; i < d->ndim; i++) {
        n *= d->out[i];
        m *= shape[i];
    }
    if (m == n) {
        memcpy(dst, x, (size_t)n * sizeof *dst);
        return;
    }
    if (m == 1) {
        for (int64_t i = 0; i < n; i++) dst[i] = x[0];
        return;
    }
    int64_t idx[D5_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t k = 0;
        for (int32_t j = 0; j < d->ndim; j++) k = k * shape[j] + (shape[j] == 1 ? 0 : idx[j]);
        dst[i] = x[k];
        for (int32_t j = d->ndim - 1; j >= 0 && ++idx[j] == d->out[j]; j--) idx[j] = 0;
    }
}

/* Mul (div 0) and Div (div 1) backward: with A and B broadcast into the
 * output's shape, dA = dY B or dY / B, dB = dY A or -dY A / B^2, each summed
 * over the dimensions its operand was broadcast along. */
static d5_status mul_div_backward(void *state, const d5_op_call *call, int div)
{
    const d5_tensor *in = call->inputs, *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    dbin *d = state;
    if (!gin[0].data && !gin[1].data) return D5_OK;
    int64_t n = 1;
    for (int32_t i = 0; i < d->ndim; i++) n *= d->out[i];
    float *a = d5_alloc((size_t)(3 * n + 1) * sizeof *a, d->name);
    if (!a) return D5_ERR_NOMEM;
    float *b = a + n, *t = b + n;
    const float *g = gout[0].data;
    expand(d, in[0].data, d->shape[0], a);
    expand(d, in[1].data, d->shape[1], b);
    for (int k = 0; k < 2; k++) {
        if (!gin[k].data) continue;
        const int mode = 2 * div + k, par = n * 12 >= D5_PARALLEL_BYTES;
        D5_PARALLEL_RANGE(n, par, lo, hi, {
            if (mode == 0)
                for (int64_t i = lo; i < hi; i++) t[i] = g[i] * b[i];
            else if (mode == 1)
                for (int64_t i = lo; i < hi; i++) t[i] = g[i] * a[i];
            else if (mode == 2)
                for (int64_t i = lo; i < hi; i++) t[i] = g[i] / b[i];
            else
                for (int64_t i = lo; i < hi; i++) t[i] = -g[i] * a[i] / (b[i] * b[i]);
        })
        reduce_into(d, t, d->shape[k], 1.0f, gin[k].data);
    }
    d5_free(a);
    return D5_OK;
}

static d5_status mul_backward(void *state, const d5_op_call *call)
{
    return mul_div_backward(state, call, 0);
}

static d5_status div_backward(void *state, const d5_op_call *call)
{
    return mul_div_backward(state, call, 1);
}

#define BINARY_OP(NAME, ALG, COMMUTATIVE, FLAGS, BACKWARD)                                         \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return binary_create(#NAME, ALG, COMMUTATIVE, args->inputs, args->attrs, args->outputs,    \
                             state);                                                               \
    }                                                                                              \
    const d5_op_desc d5__op_dnnl_##NAME = {.abi_version = D5_OP_ABI_VERSION,                       \
                                           .flags = FLAGS,                                         \
                                           .name = #NAME,                                          \
                                           .backend = "dnnl",                                      \
                                           .min_inputs = 2,                                        \
                                           .max_inputs = 2,                                        \
                                           .min_outputs = 1,                                       \
                                           .max_outputs = 1,                                       \
                                           .create = create_##NAME,                                \
                                           .forward = forward,                                     \
                                           .backward = BACKWARD,                                   \
                                           .destroy = destroy}

/* Their gradients, dY and -dY, are written element by element: in place is fine. */
BINARY_OP(Add, dnnl_binary_add, 1, D5_OP_HAS_BACKWARD | D5_OP_GRAD_IN_PLACE, add_backward);
BINARY_OP(Sub, dnnl_binary_sub, 0, D5_OP_HAS_BACKWARD | D5_OP_GRAD_IN_PLACE, sub_backward);
/* Theirs read both operands after the gradients are written: not in place. */
BINARY_OP(Mul, dnnl_binary_mul, 1, D5_OP_HAS_BACKWARD, mul_backward);
BINARY_OP(Div, dnnl_binary_div, 0, D5_OP_HAS_BACKWARD, div_backward);
