/* MaxPool (ONNX opset 12), AveragePool (opset 19), GlobalMaxPool and
 * GlobalAveragePool (one window over all spatial axes) on cuDNN, float32,
 * device memory, forward and backward, 1 to 3 spatial axes (1-d as 2-d with
 * a trailing axis of 1): kernel_shape, strides, pads and auto_pad through the
 * window arithmetic of ../ref/pool.h, and AveragePool's count_include_pad
 * (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING or _EXCLUDE_PADDING).
 * https://onnx.ai/onnx/operators/onnx__MaxPool.html
 * https://onnx.ai/onnx/operators/onnx__AveragePool.html
 *
 * cuDNN pads both ends of an axis alike: the begin padding is used, and a
 * geometry whose output size cuDNN computes differently from ONNX's is
 * declined. Where the sizes agree, every window covers the positions ONNX
 * gives it, all inside the padded input, so maxima, averages over the
 * positions inside the input and averages over the whole window all agree.
 * Declined with D5_ERR_UNSUPPORTED, so that the caller falls back to another
 * backend: ceil_mode 1 and dilations other than 1 (cuDNN has neither),
 * MaxPool's second output Indices, more than 3 spatial axes, other dtypes.
 * storage_order only numbers Indices and is accepted (0 or 1) without it.
 *
 * The backward is cudnnPoolingBackward, which reads X, Y and dY: MaxPool's
 * gradient goes to the position of each maximum. */
#include "../ref/pool.h"
#include "cuda_util.h"

#include <stdio.h>
#include <string.h>

typedef struct cpool {
    const char *name; /* "MaxPool", "AveragePool" */
    int max;
    d5_pool p;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y;
    cudnnPoolingDescriptor_t pool;
} cpool;

static void destroy(void *state)
{
    cpool *c = state;
    if (!c) return;
    d5__cudnn_tensor_free(c->x);
    d5__cudnn_tensor_free(c->y);
    if (c->pool) (void)cudnnDestroyPoolingDescriptor(c->pool);
    d5__cudnn_free(c->h);
    d5_free(c);
}

/* The attributes cuDNN cannot follow, then the window geometry. */
static d5_status geometry(cpool *c, const d5_tensor *in, int32_t nin, int32_t nout,
                          const d5_attrs *attrs, d5_tensor_desc *y, int64_t *include)
{
    char op[32];
    snprintf(op, sizeof op, "%s (cuda)", c->name);
    d5_status s = d5__cuda_need_f32(c->name, in, nin, 0);
    int64_t ceil_mode = 0, order = 0, ndil = 0;
    const int64_t *dil = NULL;
    *include = 0;
    if (s == D5_OK && c->max && nout > 1)
        s = d5_error(D5_ERR_UNSUPPORTED,
                     "%s: the Indices output is not supported (cuDNN does not return the position "
                     "of each maximum); use the ref backend",
                     op);
    if (s == D5_OK && c->max) s = d5_attrs_int(attrs, "storage_order", 0, &order);
    if (s == D5_OK && order != 0 && order != 1)
        s = d5_error(D5_ERR_INVALID, "%s: storage_order is %lld, expected 0 or 1", op,
                     (long long)order);
    if (s == D5_OK && !c->max) s = d5_attrs_int(attrs, "count_include_pad", 0, include);
    if (s == D5_OK) s = d5_attrs_int(attrs, "ceil_mode", 0, &ceil_mode);
    if (s == D5_OK && ceil_mode != 0)
        s = d5_error(D5_ERR_UNSUPPORTED, "%s: ceil_mode=%lld is not supported (cuDNN rounds down)",
                     op, (long long)ceil_mode);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "dilations", &dil, &ndil);
    for (int64_t i = 0; s == D5_OK && i < ndil; i++)
        if (dil[i] != 1)
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "%s: dilations[%lld] is %lld; cuDNN pools without dilation", op,
                         (long long)i, (long long)dil[i]);
    if (s == D5_OK && (in[0].desc.ndim < 3 || in[0].desc.ndim > 5))
        s = d5_error(D5_ERR_UNSUPPORTED, "%s: input has %d dimensions; cuDNN pools 3-d to 5-d", op,
                     (int)in[0].desc.ndim);
    if (s == D5_OK) s = d5__pool_init(op, &in[0].desc, attrs, &c->p, y);
    if (s == D5_OK && (c->max || !*include)) s = d5__pool_check_windows(op, &c->p);
    return s;
}

/* The descriptors, with a 1-d pooling as 2-d over (L, 1). */
static d5_status describe(cpool *c, const d5_tensor *in, const d5_tensor_desc *y, int64_t include)
{
    const d5_pool *p = &c->p;
    int nsp = p->naxes < 2 ? 2 : p->naxes, nd = nsp + 2;
    int window[3], pad[3], stride[3], dims[D5_MAX_DIMS];
    d5_status s = D5_OK;
    for (int i = 0; i < nsp && s == D5_OK; i++) {
        int real = i < p->naxes;
        s = d5__cuda_int(real ? p->kernel[i] : 1, c->name, "a kernel size", &window[i]);
        if (s == D5_OK) s = d5__cuda_int(real ? p->pad_begin[i] : 0, c->name, "a pad", &pad[i]);
        if (s == D5_OK) s = d5__cuda_int(real ? p->stride[i] : 1, c->name, "a stride", &stride[i]);
    }
    cudnnPoolingMode_t mode = c->max    ? CUDNN_POOLING_MAX
                              : include ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (s == D5_OK) s = d5__cudnn_tensor(&c->x, in[0].desc.ndim, in[0].desc.shape, c->name);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->y, y->ndim, y->shape, c->name);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreatePoolingDescriptor(&c->pool), c->name,
                            "cudnnCreatePoolingDescriptor");
    if (s == D5_OK) {
        s = d5__cudnn_check(cudnnSetPoolingNdDescriptor(c->pool, mode, CUDNN_PROPAGATE_NAN, nsp,
                                                        window, pad, stride),
                            c->name, "cudnnSetPoolingNdDescriptor");
        if (s == D5_ERR_BACKEND) { /* a geometry cuDNN refuses: let the caller fall back */
            char why[512];
            snprintf(why, sizeof why, "%s", d5_last_error());
            s = d5_error(D5_ERR_UNSUPPORTED, "%s", why);
        }
    }
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnGetPoolingNdForwardOutputDim(c->pool, c->x, nd, dims), c->name,
                            "cudnnGetPoolingNdForwardOutputDim");
    for (int i = 0; i < p->naxes && s == D5_OK; i++)
        if ((int64_t)dims[i + 2] != p->out[i])
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "%s (cuda): cuDNN pads both ends alike; with pads begin %lld, end %lld "
                         "along spatial axis %d its output has %d positions, ONNX's %lld",
                         c->name, (long long)p->pad_begin[i], (long long)p->pad_end[i], i,
                         dims[i + 2], (long long)p->out[i]);
    return s;
}

static d5_status pool_create(const char *name, int max, const d5_tensor *in, int32_t nin,
                             const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state)
{
    cpool *c = d5_calloc(1, sizeof *c, name);
    if (!c) return D5_ERR_NOMEM;
    c->name = name;
    c->max = max;
    d5_tensor_desc y;
    memset(&y, 0, sizeof y);
    y.dtype = D5_F32;
    int64_t include = 0;
    d5_status s = geometry(c, in, nin, nout, attrs, &y, &include);
    if (s == D5_OK) s = d5__cudnn_create(&c->h, name);
    if (s == D5_OK) s = describe(c, in, &y, include);
    if (s == D5_OK) out[0] = y;
    return d5__cuda_created(s, c, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    cpool *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(c->name, call);
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnPoolingForward(c->h, c->pool, &one, c->x, in[0].data, &zero, c->y, out[0].data),
            c->name, "cudnnPoolingForward");
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    cpool *c = state;
    const float one = 1.0f, zero = 0.0f;
    int run = 0;
    d5_status s = d5__cuda_backward_one(c->name, call, d5_tensor_desc_numel(&in[0].desc), &run);
    if (!run) return s;
    return d5__cudnn_check(cudnnPoolingBackward(c->h, c->pool, &one, c->y, call->outputs[0].data,
                                                c->y, call->grad_outputs[0].data, c->x, in[0].data,
                                                &zero, c->x, call->grad_inputs[0].data),
                           c->name, "cudnnPoolingBackward");
}

/* One comparison or addition per window position; X read and Y written. */
static void cost(void *state, double *flops, double *bytes)
{
    const d5_pool *p = &((cpool *)state)->p;
    double out = (double)p->planes * (double)p->out_plane;
    *flops = out * (double)p->window;
    *bytes = 4.0 * ((double)p->planes * (double)p->in_plane + out);
}

/* The global poolings: one window as large as the spatial axes. */
static d5_status global_create(const char *name, int max, const d5_tensor *in, int32_t nin,
                               const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout,
                               void **state)
{
    (void)attrs;
    if (nin < 1 || in[0].desc.ndim < 3 || in[0].desc.ndim > 5)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): the input needs 3 to 5 dimensions", name);
    int64_t kernel[3];
    for (int32_t d = 2; d < in[0].desc.ndim; d++) kernel[d - 2] = in[0].desc.shape[d];
    d5_attr a = {
        .name = "kernel_shape", .type = D5_ATTR_INTS, .ints = kernel, .count = in[0].desc.ndim - 2};
    d5_attrs window = {&a, 1};
    return pool_create(name, max, in, nin, &window, out, nout, state);
}

/* The create and the op table of each pooling: FN(its name, MAX, ...), FN
 * pool_create or global_create; MAX_OUT 2 for MaxPool's Indices, which
 * create declines. */
/* clang-format off */
#define D5_CUDA_POOL(NAME, FN, MAX, MAX_OUT)                                                       \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return FN(#NAME, MAX, args->inputs, args->ninputs, args->attrs, args->outputs,             \
                  args->noutputs, state);                                                          \
    }                                                                                              \
    const d5_op_desc d5__op_cuda_##NAME = {                                                        \
        D5_CUDA_OP(#NAME, D5_OP_HAS_BACKWARD, 1, 1, 1, MAX_OUT), .create = create_##NAME,          \
        .forward = forward, .backward = backward, .destroy = destroy, .cost = cost}

D5_CUDA_POOL(MaxPool, pool_create, 1, 2);
D5_CUDA_POOL(AveragePool, pool_create, 0, 1);
D5_CUDA_POOL(GlobalMaxPool, global_create, 1, 1);
D5_CUDA_POOL(GlobalAveragePool, global_create, 0, 1);
/* clang-format on */
