/* Operators of whole tensors on cuDNN, float32, device memory, forward:
 *
 * - BatchNormalization in inference (ONNX opset 15, training_mode 0):
 *   cudnnBatchNormalizationForwardInference in spatial mode, Y = scale (X -
 *   mean) / sqrt(var + epsilon) + B per channel (axis 1), X of 2 to 5
 *   dimensions. training_mode 1 and the running statistics' outputs are
 *   declined (D5_ERR_UNSUPPORTED) so that the caller falls back.
 *   https://onnx.ai/onnx/operators/onnx__BatchNormalization.html
 * - Add, Sub and Mul with ONNX's multidirectional broadcasting where the
 *   output has the first input's shape (or, for Add and Mul, the second's:
 *   they commute): cudnnOpTensor, whose second operand broadcasts along any
 *   axis of size 1. Sub is an addition with alpha2 = -1. Other broadcasts
 *   (both inputs smaller than the output) are declined.
 *   https://onnx.ai/onnx/operators/onnx__Add.html
 *
 * Both ranks are aligned to the right as ONNX broadcasts, and padded to
 * cuDNN's 4 to 8 dimensions with trailing axes of 1. */
#include "cuda_util.h"

#include <stdio.h>
#include <string.h>

/* ---- BatchNormalization ---- */

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

static d5_status bn_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                           d5_tensor_desc *out, int32_t nout, void **state)
{
    int64_t training = 0;
    double epsilon = 1e-5;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 5 && s == D5_OK; i++) s = d5__cuda_need_f32(BN, in, nin, i);
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
    if (s != D5_OK) {
        bn_destroy(c);
        return s;
    }
    out[0] = *x;
    *state = c;
    return D5_OK;
}

static d5_status bn_forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                            int32_t nout)
{
    cbn *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_on_device(BN, "input", in, nin);
    if (s == D5_OK) s = d5__cuda_on_device(BN, "output", out, nout);
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

const d5_op_desc d5__op_cuda_BatchNormalization = {.abi_version = D5_OP_ABI_VERSION,
                                                   .flags = D5_OP_CUDA,
                                                   .name = "BatchNormalization",
                                                   .backend = "cuda",
                                                   .min_inputs = 5,
                                                   .max_inputs = 5,
                                                   .min_outputs = 1,
                                                   .max_outputs = 3,
                                                   .create = bn_create,
                                                   .forward = bn_forward,
                                                   .destroy = bn_destroy,
                                                   .cost = bn_cost};

/* ---- Add, Sub, Mul ---- */

typedef struct cbinary {
    const char *name;
    cudnnHandle_t h;
    cudnnOpTensorDescriptor_t op;
    cudnnTensorDescriptor_t a, b; /* a: the output's shape; b broadcasts */
    int swap;                     /* the operands exchanged: input 1 is a */
    float alpha2;                 /* -1 for Sub */
    int64_t elements;
} cbinary;

static void binary_destroy(void *state)
{
    cbinary *c = state;
    if (!c) return;
    d5__cudnn_tensor_free(c->a);
    d5__cudnn_tensor_free(c->b);
    if (c->op) (void)cudnnDestroyOpTensorDescriptor(c->op);
    d5__cudnn_free(c->h);
    d5_free(c);
}

/* The shape of `d` aligned to the right on `rank` axes (leading 1s). */
static void aligned(const d5_tensor_desc *d, int32_t rank, int64_t *shape)
{
    for (int32_t i = 0; i < rank; i++) {
        int32_t j = i - (rank - d->ndim);
        shape[i] = j < 0 ? 1 : d->shape[j];
    }
}

/* 1 when b broadcasts to a (each axis equal or 1 in b). */
static int broadcasts(const int64_t *a, const int64_t *b, int32_t rank)
{
    for (int32_t i = 0; i < rank; i++)
        if (b[i] != a[i] && b[i] != 1) return 0;
    return 1;
}

static d5_status binary_create(const char *name, cudnnOpTensorOp_t kind, float alpha2, int commutes,
                               const d5_tensor *in, int32_t nin, d5_tensor_desc *out, void **state)
{
    d5_status s = d5__cuda_need_f32(name, in, nin, 0);
    if (s == D5_OK) s = d5__cuda_need_f32(name, in, nin, 1);
    if (s != D5_OK) return s;
    int32_t rank = in[0].desc.ndim > in[1].desc.ndim ? in[0].desc.ndim : in[1].desc.ndim;
    int64_t x[D5_MAX_DIMS], y[D5_MAX_DIMS];
    aligned(&in[0].desc, rank, x);
    aligned(&in[1].desc, rank, y);
    int swap = 0;
    if (!broadcasts(x, y, rank)) {
        if (!commutes || !broadcasts(y, x, rank))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (cuda): the output must have the %s input's shape (cuDNN "
                            "broadcasts its second operand only)",
                            name, commutes ? "first or the second" : "first");
        swap = 1;
    }
    if (rank > 8)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): %d dimensions; cuDNN takes up to 8", name,
                        (int)rank);
    cbinary *c = d5_calloc(1, sizeof *c, name);
    if (!c) return D5_ERR_NOMEM;
    c->name = name;
    c->swap = swap;
    c->alpha2 = alpha2;
    const int64_t *a = swap ? y : x, *b = swap ? x : y;
    s = d5__cudnn_create(&c->h, name);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->a, rank, a, name);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->b, rank, b, name);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreateOpTensorDescriptor(&c->op), name,
                            "cudnnCreateOpTensorDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnSetOpTensorDescriptor(c->op, kind, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN), name,
            "cudnnSetOpTensorDescriptor");
    if (s != D5_OK) {
        binary_destroy(c);
        return s;
    }
    memset(&out[0], 0, sizeof out[0]);
    out[0].dtype = D5_F32;
    out[0].ndim = rank;
    for (int32_t i = 0; i < rank; i++) out[0].shape[i] = a[i];
    c->elements = d5_tensor_desc_numel(&out[0]);
    *state = c;
    return D5_OK;
}

static d5_status binary_forward(void *state, const d5_tensor *in, int32_t nin, d5_tensor *out,
                                int32_t nout)
{
    cbinary *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_on_device(c->name, "input", in, nin);
    if (s == D5_OK) s = d5__cuda_on_device(c->name, "output", out, nout);
    const void *a = in[c->swap].data, *b = in[1 - c->swap].data;
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnOpTensor(c->h, c->op, &one, c->a, a, &c->alpha2, c->b, b, &zero,
                                          c->a, out[0].data),
                            c->name, "cudnnOpTensor");
    return s;
}

static void binary_cost(void *state, double *flops, double *bytes)
{
    const cbinary *c = state;
    *flops = (double)c->elements;
    *bytes = 12.0 * (double)c->elements;
}

static d5_status add_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs, (void)nout;
    return binary_create("Add", CUDNN_OP_TENSOR_ADD, 1.0f, 1, in, nin, out, state);
}

static d5_status sub_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs, (void)nout;
    return binary_create("Sub", CUDNN_OP_TENSOR_ADD, -1.0f, 0, in, nin, out, state);
}

static d5_status mul_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs, (void)nout;
    return binary_create("Mul", CUDNN_OP_TENSOR_MUL, 1.0f, 1, in, nin, out, state);
}

#define D5_CUDA_BINARY(NAME, CREATE)                                                               \
    const d5_op_desc d5__op_cuda_##NAME = {.abi_version = D5_OP_ABI_VERSION,                       \
                                           .flags = D5_OP_CUDA,                                    \
                                           .name = #NAME,                                          \
                                           .backend = "cuda",                                      \
                                           .min_inputs = 2,                                        \
                                           .max_inputs = 2,                                        \
                                           .min_outputs = 1,                                       \
                                           .max_outputs = 1,                                       \
                                           .create = CREATE,                                       \
                                           .forward = binary_forward,                              \
                                           .destroy = binary_destroy,                              \
                                           .cost = binary_cost};
D5_CUDA_BINARY(Add, add_create)
D5_CUDA_BINARY(Sub, sub_create)
D5_CUDA_BINARY(Mul, mul_create)
