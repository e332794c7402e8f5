/* BatchNormalization in inference (ONNX opset 15, training_mode 0) on cuDNN,
 * float32, device memory: cudnnBatchNormalizationForwardInference in spatial
 * mode, Y = scale (X - mean) / sqrt(var + epsilon) + B per channel (axis 1),
 * X of 2 to 5 dimensions (padded to cuDNN's 4 or 5 with trailing axes of 1).
 * training_mode 1 and the running statistics' outputs are declined
 * (D5_ERR_UNSUPPORTED) so that the caller falls back.
 * https://onnx.ai/onnx/operators/onnx__BatchNormalization.html */
#include "cuda_util.h"

#include <stdio.h>
#include <string.h>

typedef struct cbn {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, bn;
    double epsilon;
    int64_t elements;
} cbn;

static const char *const BN = "BatchNormalization";

static void bn_destroy(void *state)
{
    cbn *c = state;
    if (!c) return;
    d5__cudnn_tensor_free(c->x);
    d5__cudnn_tensor_free(c->bn);
    d5__cudnn_free(c->h);
    d5_free(c);
}

static d5_status bn_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    int64_t training = 0;
    double epsilon = 1e-5;
    d5_status s = d5__cuda_inputs_f32(BN, in, nin, 5, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "training_mode", 0, &training);
    if (s == D5_OK) s = d5_attrs_float(attrs, "epsilon", 1e-5, &epsilon);
    if (s != D5_OK) return s;
    if (training || nout > 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (cuda): inference only (training_mode 0, one output); the cuda "
                        "backend has no training form yet",
                        BN);
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2 || x->ndim > 5)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): X has %d dimensions; cuDNN takes 2 to 5",
                        BN, (int)x->ndim);
    for (int32_t i = 1; i < 5; i++)
        if (in[i].desc.ndim != 1 || in[i].desc.shape[0] != x->shape[1])
            return d5_error(D5_ERR_SHAPE,
                            "%s (cuda): input %d is not a vector of the %lld channels", BN, (int)i,
                            (long long)x->shape[1]);
    if (epsilon < CUDNN_BN_MIN_EPSILON)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): epsilon %g is below cuDNN's minimum %g", BN,
                        epsilon, (double)CUDNN_BN_MIN_EPSILON);
    cbn *c = d5_calloc(1, sizeof *c, "BatchNormalization (cuda)");
    if (!c) return D5_ERR_NOMEM;
    c->epsilon = epsilon;
    c->elements = d5_tensor_desc_numel(x);
    s = d5__cudnn_create(&c->h, BN);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->x, x->ndim, x->shape, BN);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreateTensorDescriptor(&c->bn), BN, "cudnnCreateTensorDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnDeriveBNTensorDescriptor(c->bn, c->x, CUDNN_BATCHNORM_SPATIAL), BN,
                            "cudnnDeriveBNTensorDescriptor");
    if (s == D5_OK) out[0] = *x;
    return d5__cuda_created(s, c, bn_destroy, state);
}

static d5_status bn_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    cbn *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(BN, call);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnBatchNormalizationForwardInference(
                                c->h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, c->x, in[0].data, c->x,
                                out[0].data, c->bn, in[1].data, in[2].data, in[3].data, in[4].data,
                                c->epsilon),
                            BN, "cudnnBatchNormalizationForwardInference");
    return s;
}

static void bn_cost(void *state, double *flops, double *bytes)
{
    const cbn *c = state;
    *flops = 2.0 * (double)c->elements;
    *bytes = 8.0 * (double)c->elements;
}

/* clang-format off */
const d5_op_desc d5__op_cuda_BatchNormalization = {
    D5_CUDA_OP("BatchNormalization", 0, 5, 5, 1, 3), .create = bn_create, .forward = bn_forward,
    .destroy = bn_destroy, .cost = bn_cost};
/* clang-format on */
