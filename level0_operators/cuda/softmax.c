/* Softmax and LogSoftmax (ONNX opset 13) on cuDNN (cudnnSoftmaxForward and
 * cudnnSoftmaxBackward), float32, device memory: along the one axis given by
 * the attribute axis (default -1; negative counts from the back).
 * https://onnx.ai/onnx/operators/onnx__Softmax.html
 * https://onnx.ai/onnx/operators/onnx__LogSoftmax.html
 *
 * The tensor is seen as [outer, n, inner] around the axis by the ref
 * operators' d5__axis_view_create (which also gives the 2-d coercion of the
 * opsets before 13 when a network passes an older opset) and described to
 * cuDNN as N = outer, C = n, H = inner, W = 1, so that
 * CUDNN_SOFTMAX_MODE_CHANNEL normalises over the axis at every (outer, inner)
 * position. Softmax uses CUDNN_SOFTMAX_ACCURATE (the maximum is
 * subtracted first), LogSoftmax CUDNN_SOFTMAX_LOG. The backward reads Y and
 * dY: Softmax dX = Y (dY - sum(dY Y)), LogSoftmax dX = dY - exp(Y) sum(dY). */
#include "../ref/util.h"
#include "cuda_util.h"

typedef struct csoftmax {
    const char *name;
    cudnnSoftmaxAlgorithm_t algo;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t t; /* X, Y and their gradients alike */
    int64_t numel;
} csoftmax;

static void destroy(void *state)
{
    csoftmax *c = state;
    if (!c) return;
    d5__cudnn_tensor_free(c->t);
    d5__cudnn_free(c->h);
    d5_free(c);
}

static d5_status softmax_create(const char *name, cudnnSoftmaxAlgorithm_t algo, const d5_tensor *in,
                                int32_t nin, const d5_attrs *attrs, d5_tensor_desc *out,
                                void **state)
{
    d5_status s = d5__cuda_need_f32(name, in, nin, 0);
    void *view = NULL;
    if (s == D5_OK) s = d5__axis_view_create(name, in, nin, attrs, out, &view);
    if (s != D5_OK) return s;
    d5_axis_view v = *(const d5_axis_view *)view;
    d5_free(view);
    csoftmax *c = d5_calloc(1, sizeof *c, name);
    if (!c) return D5_ERR_NOMEM;
    c->name = name;
    c->algo = algo;
    c->numel = v.outer * v.n * v.inner;
    const int64_t shape[4] = {v.outer, v.n, v.inner, 1};
    s = d5__cudnn_create(&c->h, name);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->t, 4, shape, name);
    return d5__cuda_created(s, c, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const csoftmax *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(c->name, call);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnSoftmaxForward(c->h, c->algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                                c->t, in[0].data, &zero, c->t, out[0].data),
                            c->name, "cudnnSoftmaxForward");
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const csoftmax *c = state;
    const float one = 1.0f, zero = 0.0f;
    int run = 0;
    d5_status s = d5__cuda_backward_one(c->name, call, c->numel, &run);
    if (!run) return s;
    return d5__cudnn_check(cudnnSoftmaxBackward(c->h, c->algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                                c->t, call->outputs[0].data, c->t,
                                                call->grad_outputs[0].data, &zero, c->t,
                                                call->grad_inputs[0].data),
                           c->name, "cudnnSoftmaxBackward");
}

/* max, subtract, exp, sum and divide: five operations per element. */
static void cost(void *state, double *flops, double *bytes)
{
    const csoftmax *c = state;
    *flops = 5.0 * (double)c->numel;
    *bytes = 8.0 * (double)c->numel;
}

/* The create and the op table of Softmax and of LogSoftmax. */
/* clang-format off */
#define D5_CUDA_SOFTMAX(NAME, ALGO)                                                                \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return softmax_create(#NAME, ALGO, args->inputs, args->ninputs, args->attrs,               \
                              args->outputs, state);                                               \
    }                                                                                              \
    const d5_op_desc d5__op_cuda_##NAME = {                                                        \
        D5_CUDA_OP(#NAME, D5_OP_HAS_BACKWARD, 1, 1, 1, 1), .create = create_##NAME,                \
        .forward = forward, .backward = backward, .destroy = destroy, .cost = cost}

D5_CUDA_SOFTMAX(Softmax, CUDNN_SOFTMAX_ACCURATE);
D5_CUDA_SOFTMAX(LogSoftmax, CUDNN_SOFTMAX_LOG);
/* clang-format on */
