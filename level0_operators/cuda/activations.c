/* Element-wise activations on cuDNN (cudnnActivationForward and
 * cudnnActivationBackward), float32, device memory, with the semantics of the
 * ref operators (see ../ref/<name>.c):
 *   Relu (ONNX opset 14)    https://onnx.ai/onnx/operators/onnx__Relu.html
 *   Sigmoid (ONNX opset 13) https://onnx.ai/onnx/operators/onnx__Sigmoid.html
 *   Tanh (ONNX opset 13)    https://onnx.ai/onnx/operators/onnx__Tanh.html
 *   Elu (ONNX opset 6), attribute alpha (default 1.0)
 *                           https://onnx.ai/onnx/operators/onnx__Elu.html
 * The tensor is seen as one dense row of elements (a 1 x 1 x 1 x numel
 * descriptor), so any rank works, up to INT32_MAX elements. The backward
 * reads X, Y and dY. */
#include "cuda_util.h"

typedef struct act_kind {
    const char *name;
    cudnnActivationMode_t mode;
    int has_alpha; /* Elu: coef is the float attribute alpha */
} act_kind;

typedef struct cact {
    const act_kind *k;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t t; /* X, Y and their gradients alike */
    cudnnActivationDescriptor_t act;
    int64_t numel;
} cact;

static void destroy(void *state)
{
    cact *a = state;
    if (!a) return;
    d5__cudnn_tensor_free(a->t);
    if (a->act) (void)cudnnDestroyActivationDescriptor(a->act);
    d5__cudnn_free(a->h);
    d5_free(a);
}

static d5_status act_create(const act_kind *k, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    double alpha = 0;
    d5_status s = d5__cuda_need_f32(k->name, in, nin, 0);
    if (s == D5_OK && k->has_alpha) s = d5_attrs_float(attrs, "alpha", 1.0, &alpha);
    if (s != D5_OK) return s;
    cact *a = d5_calloc(1, sizeof *a, k->name);
    if (!a) return D5_ERR_NOMEM;
    a->k = k;
    a->numel = d5_tensor_desc_numel(&in[0].desc);
    s = d5__cudnn_create(&a->h, k->name);
    const int64_t row[4] = {1, 1, 1, a->numel};
    if (s == D5_OK) s = d5__cudnn_tensor(&a->t, 4, row, k->name);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreateActivationDescriptor(&a->act), k->name,
                            "cudnnCreateActivationDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnSetActivationDescriptor(a->act, k->mode, CUDNN_PROPAGATE_NAN, alpha), k->name,
            "cudnnSetActivationDescriptor");
    if (s == D5_OK) out[0] = in[0].desc;
    return d5__cuda_created(s, a, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    const cact *a = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(a->k->name, call);
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnActivationForward(a->h, a->act, &one, a->t, in[0].data, &zero, a->t, out[0].data),
            a->k->name, "cudnnActivationForward");
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const cact *a = state;
    const float one = 1.0f, zero = 0.0f;
    int run = 0;
    d5_status s = d5__cuda_backward_one(a->k->name, call, a->numel, &run);
    if (!run) return s;
    return d5__cudnn_check(cudnnActivationBackward(a->h, a->act, &one, a->t, call->outputs[0].data,
                                                   a->t, call->grad_outputs[0].data, a->t,
                                                   call->inputs[0].data, &zero, a->t,
                                                   call->grad_inputs[0].data),
                           a->k->name, "cudnnActivationBackward");
}

/* One operation per element; X read and Y written. */
static void cost(void *state, double *flops, double *bytes)
{
    const cact *a = state;
    *flops = (double)a->numel;
    *bytes = 8.0 * (double)a->numel;
}

/* One table per activation. */
/* clang-format off */
#define D5_CUDA_ACTIVATION(NAME, MODE, HAS_ALPHA)                                                  \
    static const act_kind kind_##NAME = {#NAME, MODE, HAS_ALPHA};                                  \
    static d5_status create_##NAME(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return act_create(&kind_##NAME, args->inputs, args->ninputs, args->attrs, args->outputs,   \
                          state);                                                                  \
    }                                                                                              \
    const d5_op_desc d5__op_cuda_##NAME = {                                                        \
        D5_CUDA_OP(#NAME, D5_OP_HAS_BACKWARD, 1, 1, 1, 1), .create = create_##NAME,                \
        .forward = forward, .backward = backward, .destroy = destroy, .cost = cost}

D5_CUDA_ACTIVATION(Relu, CUDNN_ACTIVATION_RELU, 0);
D5_CUDA_ACTIVATION(Sigmoid, CUDNN_ACTIVATION_SIGMOID, 0);
D5_CUDA_ACTIVATION(Tanh, CUDNN_ACTIVATION_TANH, 0);
D5_CUDA_ACTIVATION(Elu, CUDNN_ACTIVATION_ELU, 1);
/* clang-format on */
