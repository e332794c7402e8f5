/* Conv (ONNX opset 11) on cuDNN, float32, device memory: forward (with the
 * bias added by cudnnAddTensor), backward data, backward filter and the bias
 * gradient (cudnnConvolutionBackwardBias); groups, strides, dilations and
 * pads; 2-d and 3-d convolutions on Nd descriptors, 1-d ones as 2-d with a
 * height of 1. https://onnx.ai/onnx/operators/onnx__Conv.html
 *
 * Shapes, attributes and auto_pad come from ../ref/conv_shape.h, as for the
 * other backends. cuDNN pads both ends of an axis alike: the begin padding is
 * used, and a convolution whose output size cuDNN then computes differently
 * from ONNX's (an end padding that adds or removes an output position) is
 * declined with D5_ERR_UNSUPPORTED. Where the sizes agree, every window lies
 * where ONNX puts it and reads the same zeros.
 *
 * The forward algorithm is chosen at create by cudnnFindConvolutionForward-
 * Algorithm (measured), or cudnnGetConvolutionForwardAlgorithm_v7 (heuristic)
 * when that fails, and its workspace is allocated then; the backward ones the
 * same way on the first backward call, growing the workspace if they need
 * more. The math type is CUDNN_FMA_MATH: float32 arithmetic without TF32
 * tensor cores, so that results compare with ref at float32 tolerances;
 * under the executor's compute precision "tf32", CUDNN_DEFAULT_MATH and
 * algorithms on tensor cores.
 *
 * FusedConv (d5's fuse-conv-activation pass: Y = activation(Conv(X, W, B) +
 * Z), ../ref/fusedconv.c) is the same convolution accumulated onto Z (beta
 * 1: cuDNN's Y = conv + beta Y, with Z copied into Y first unless the
 * executor placed Y over Z), the bias added, then ReLU in place. */
#include "../ref/conv_shape.h"
#include "../ref/fusedconv.h"
#include "cuda_util.h"

#include <string.h>

typedef struct cconv {
    d5_conv_geometry g;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd;
    int have_bwd; /* backward algorithms chosen */
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    void *ws; /* workspace, shared by the three */
    size_t ws_size;
    int tf32;                         /* compute precision tf32: tensor cores allowed */
    d5__fusion f;                     /* FusedConv: Z and ReLU */
    cudnnActivationDescriptor_t relu; /* FusedConv with ReLU */
} cconv;

static const char *const OP = "Conv";

static void destroy(void *state)
{
    cconv *c = state;
    if (!c) return;
    d5__cudnn_tensor_free(c->x);
    d5__cudnn_tensor_free(c->y);
    d5__cudnn_tensor_free(c->bias);
    if (c->w) (void)cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) (void)cudnnDestroyConvolutionDescriptor(c->conv);
    if (c->relu) (void)cudnnDestroyActivationDescriptor(c->relu);
    d5__cuda_free(c->ws);
    d5__cudnn_free(c->h);
    d5_free(c);
}

/* Grows the workspace to `need` bytes. */
static d5_status reserve(cconv *c, size_t need)
{
    if (need <= c->ws_size) return D5_OK;
    d5__cuda_free(c->ws);
    c->ws = NULL;
    c->ws_size = 0;
    d5_status s = d5__cuda_malloc(&c->ws, need, OP, "workspace");
    if (s == D5_OK) c->ws_size = need;
    return s;
}

/* The three passes, and one candidate algorithm of any of them. */
typedef enum pass { PASS_FORWARD, PASS_DATA, PASS_FILTER } pass;
static const char *const PASS_NAME[] = {"forward", "backward-data", "backward-filter"};

typedef struct candidate {
    int algo;
    cudnnStatus_t status;
    cudnnMathType_t math;
} candidate;

static cudnnStatus_t workspace_size(const cconv *c, pass p, int algo, size_t *need)
{
    switch (p) {
    case PASS_FORWARD:
        return cudnnGetConvolutionForwardWorkspaceSize(c->h, c->x, c->w, c->conv, c->y,
                                                       (cudnnConvolutionFwdAlgo_t)algo, need);
    case PASS_DATA:
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            c->h, c->w, c->y, c->conv, c->x, (cudnnConvolutionBwdDataAlgo_t)algo, need);
    default:
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            c->h, c->x, c->y, c->conv, c->w, (cudnnConvolutionBwdFilterAlgo_t)algo, need);
    }
}

/* Takes the first candidate (cuDNN lists the fastest first) that ran, uses
 * no tensor-core math and whose workspace can be had. */
static d5_status pick(cconv *c, pass p, const candidate *cs, int n, int *algo)
{
    d5_status last = D5_OK;
    for (int i = 0; i < n; i++) {
        if (cs[i].status != CUDNN_STATUS_SUCCESS ||
            (!c->tf32 && (cs[i].math == CUDNN_TENSOR_OP_MATH ||
                          cs[i].math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)))
            continue;
        size_t need = 0;
        last = d5__cudnn_check(workspace_size(c, p, cs[i].algo, &need), OP, "workspace size");
        if (last == D5_OK) last = reserve(c, need);
        if (last == D5_OK) {
            *algo = cs[i].algo;
            return D5_OK;
        }
    }
    if (last != D5_OK) return last;
    return d5_error(D5_ERR_UNSUPPORTED,
                    "Conv (cuda): cuDNN offers no float32 %s algorithm for this convolution",
                    PASS_NAME[p]);
}

/* Each pass: cuDNN's measured choice, or its heuristic one when measuring
 * fails (for lack of memory, say). */
static d5_status choose_forward(cconv *c)
{
    enum { COUNT = CUDNN_CONVOLUTION_FWD_ALGO_COUNT };
    cudnnConvolutionFwdAlgoPerf_t perf[COUNT];
    candidate cs[COUNT];
    int n = 0, algo = 0;
    cudnnStatus_t st =
        cudnnFindConvolutionForwardAlgorithm(c->h, c->x, c->w, c->conv, c->y, COUNT, &n, perf);
    if (st != CUDNN_STATUS_SUCCESS || n == 0)
        st = cudnnGetConvolutionForwardAlgorithm_v7(c->h, c->x, c->w, c->conv, c->y, COUNT, &n,
                                                    perf);
    d5_status s = d5__cudnn_check(st, OP, "choosing the forward algorithm");
    if (n > COUNT) n = COUNT;
    for (int i = 0; s == D5_OK && i < n; i++)
        cs[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].mathType};
    if (s == D5_OK) s = pick(c, PASS_FORWARD, cs, n, &algo);
    if (s == D5_OK) c->fwd = (cudnnConvolutionFwdAlgo_t)algo;
    return s;
}

static d5_status choose_backward_data(cconv *c)
{
    enum { COUNT = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT };
    cudnnConvolutionBwdDataAlgoPerf_t perf[COUNT];
    candidate cs[COUNT];
    int n = 0, algo = 0;
    cudnnStatus_t st =
        cudnnFindConvolutionBackwardDataAlgorithm(c->h, c->w, c->y, c->conv, c->x, COUNT, &n, perf);
    if (st != CUDNN_STATUS_SUCCESS || n == 0)
        st = cudnnGetConvolutionBackwardDataAlgorithm_v7(c->h, c->w, c->y, c->conv, c->x, COUNT, &n,
                                                         perf);
    d5_status s = d5__cudnn_check(st, OP, "choosing the backward-data algorithm");
    if (n > COUNT) n = COUNT;
    for (int i = 0; s == D5_OK && i < n; i++)
        cs[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].mathType};
    if (s == D5_OK) s = pick(c, PASS_DATA, cs, n, &algo);
    if (s == D5_OK) c->bwd_data = (cudnnConvolutionBwdDataAlgo_t)algo;
    return s;
}

static d5_status choose_backward_filter(cconv *c)
{
    enum { COUNT = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT };
    cudnnConvolutionBwdFilterAlgoPerf_t perf[COUNT];
    candidate cs[COUNT];
    int n = 0, algo = 0;
    cudnnStatus_t st = cudnnFindConvolutionBackwardFilterAlgorithm(c->h, c->x, c->y, c->conv, c->w,
                                                                   COUNT, &n, perf);
    if (st != CUDNN_STATUS_SUCCESS || n == 0)
        st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(c->h, c->x, c->y, c->conv, c->w, COUNT,
                                                           &n, perf);
    d5_status s = d5__cudnn_check(st, OP, "choosing the backward-filter algorithm");
    if (n > COUNT) n = COUNT;
    for (int i = 0; s == D5_OK && i < n; i++)
        cs[i] = (candidate){(int)perf[i].algo, perf[i].status, perf[i].mathType};
    if (s == D5_OK) s = pick(c, PASS_FILTER, cs, n, &algo);
    if (s == D5_OK) c->bwd_filter = (cudnnConvolutionBwdFilterAlgo_t)algo;
    return s;
}

/* The descriptors: X, W, Y, the bias as (1, M, 1, ...) and the convolution,
 * with a 1-d convolution as a 2-d one of height 1. */
static d5_status describe(cconv *c, const d5_tensor_desc *y)
{
    const d5_conv_geometry *g = &c->g;
    int one_d = g->n == 1, nsp = one_d ? 2 : g->n, nd = nsp + 2;
    int64_t xs[D5_MAX_DIMS], ys[D5_MAX_DIMS], bs[D5_MAX_DIMS], ws[D5_MAX_DIMS];
    int wdims[D5_MAX_DIMS], pad[D5_MAX_DIMS], stride[D5_MAX_DIMS], dil[D5_MAX_DIMS];
    int cudnn_y[D5_MAX_DIMS];
    xs[0] = g->batch, xs[1] = g->in_channels;
    ys[0] = g->batch, ys[1] = g->out_channels;
    ws[0] = g->out_channels, ws[1] = g->in_channels / g->group;
    bs[0] = 1, bs[1] = g->out_channels;
    d5_status s = D5_OK;
    for (int i = 0; i < nsp && s == D5_OK; i++) {
        int j = one_d ? i - 1 : i; /* ONNX spatial axis; -1: the added height */
        xs[i + 2] = j < 0 ? 1 : g->in[j];
        ys[i + 2] = j < 0 ? 1 : y->shape[j + 2];
        ws[i + 2] = j < 0 ? 1 : g->kernel[j];
        bs[i + 2] = 1;
        s = d5__cuda_int(j < 0 ? 0 : g->pads_begin[j], OP, "a pad", &pad[i]);
        if (s == D5_OK) s = d5__cuda_int(j < 0 ? 1 : g->strides[j], OP, "a stride", &stride[i]);
        if (s == D5_OK) s = d5__cuda_int(j < 0 ? 1 : g->dilations[j], OP, "a dilation", &dil[i]);
    }
    for (int i = 0; i < nd && s == D5_OK; i++)
        s = d5__cuda_int(ws[i], OP, "a weight dim", &wdims[i]);
    int group = 0;
    if (s == D5_OK) s = d5__cuda_int(g->group, OP, "group", &group);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->x, nd, xs, OP);
    if (s == D5_OK) s = d5__cudnn_tensor(&c->y, nd, ys, OP);
    if (s == D5_OK && g->has_bias) s = d5__cudnn_tensor(&c->bias, nd, bs, OP);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreateFilterDescriptor(&c->w), OP, "cudnnCreateFilterDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnSetFilterNdDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, nd, wdims), OP,
            "cudnnSetFilterNdDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnCreateConvolutionDescriptor(&c->conv), OP,
                            "cudnnCreateConvolutionDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnSetConvolutionNdDescriptor(c->conv, nsp, pad, stride, dil,
                                                            CUDNN_CROSS_CORRELATION,
                                                            CUDNN_DATA_FLOAT),
                            OP, "cudnnSetConvolutionNdDescriptor");
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnSetConvolutionGroupCount(c->conv, group), OP,
                            "cudnnSetConvolutionGroupCount");
    if (s == D5_OK)
        s = d5__cudnn_check(
            cudnnSetConvolutionMathType(c->conv, c->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), OP,
            "cudnnSetConvolutionMathType");
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnGetConvolutionNdForwardOutputDim(c->conv, c->x, c->w, nd, cudnn_y),
                            OP, "cudnnGetConvolutionNdForwardOutputDim");
    for (int i = 2; i < nd && s == D5_OK; i++) {
        int ax = one_d ? i - 3 : i - 2; /* the added height always agrees */
        if (ax >= 0 && (int64_t)cudnn_y[i] != ys[i])
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "Conv (cuda): cuDNN pads both ends alike; with pads begin %lld, end %lld "
                         "along spatial axis %d its output has %d positions, ONNX's %lld",
                         (long long)g->pads_begin[ax], (long long)g->pads_end[ax], ax, cudnn_y[i],
                         (long long)ys[i]);
    }
    return s;
}

static d5_status create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s = d5__cuda_inputs_f32(OP, in, nin, 2, 1);
    if (s != D5_OK) return s;
    cconv *c = d5_calloc(1, sizeof *c, "Conv (cuda)");
    if (!c) return D5_ERR_NOMEM;
    s = d5__conv_geometry(&in[0].desc, &in[1].desc, nin > 2 ? &in[2].desc : NULL, attrs, &c->g);
    if (s == D5_OK && c->g.n > 3)
        s = d5_error(D5_ERR_UNSUPPORTED, "Conv (cuda): %d spatial dimensions; cuDNN takes 1 to 3",
                     (int)c->g.n);
    d5_tensor_desc y;
    memset(&y, 0, sizeof y);
    y.dtype = D5_F32;
    if (s == D5_OK) d5__conv_output_desc(&c->g, &y);
    if (s == D5_OK) s = d5__cuda_precision(attrs, OP, &c->tf32);
    if (s == D5_OK) s = d5__cudnn_create(&c->h, OP);
    if (s == D5_OK) s = describe(c, &y);
    if (s == D5_OK) s = choose_forward(c);
    if (s == D5_OK) args->outputs[0] = y;
    return d5__cuda_created(s, c, destroy, state);
}

static d5_status forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    cconv *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(OP, call);
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnConvolutionForward(c->h, &one, c->x, in[0].data, c->w, in[1].data,
                                                    c->conv, c->fwd, c->ws, c->ws_size, &zero, c->y,
                                                    out[0].data),
                            OP, "cudnnConvolutionForward");
    if (s == D5_OK && c->g.has_bias)
        s = d5__cudnn_check(
            cudnnAddTensor(c->h, &one, c->bias, in[2].data, &one, c->y, out[0].data), OP,
            "cudnnAddTensor (bias)");
    return s;
}

static d5_status backward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    const float *dy = call->grad_outputs[0].data;
    d5_tensor *gin = call->grad_inputs;
    cconv *c = state;
    const float one = 1.0f, zero = 0.0f;
    d5_status s = d5__cuda_call_on_device(OP, call);
    int want_bias = call->ninputs > 2 && c->g.has_bias && gin[2].data;
    if (s == D5_OK && !dy) return d5__cuda_zero_grads(OP, call); /* no gradient flows in */
    if (s == D5_OK && !c->have_bwd) {
        s = choose_backward_data(c);
        if (s == D5_OK) s = choose_backward_filter(c);
        c->have_bwd = s == D5_OK;
    }
    if (s == D5_OK && gin[0].data)
        s = d5__cudnn_check(cudnnConvolutionBackwardData(c->h, &one, c->w, in[1].data, c->y, dy,
                                                         c->conv, c->bwd_data, c->ws, c->ws_size,
                                                         &zero, c->x, gin[0].data),
                            OP, "cudnnConvolutionBackwardData");
    if (s == D5_OK && gin[1].data)
        s = d5__cudnn_check(cudnnConvolutionBackwardFilter(c->h, &one, c->x, in[0].data, c->y, dy,
                                                           c->conv, c->bwd_filter, c->ws,
                                                           c->ws_size, &zero, c->w, gin[1].data),
                            OP, "cudnnConvolutionBackwardFilter");
    if (s == D5_OK && want_bias)
        s = d5__cudnn_check(
            cudnnConvolutionBackwardBias(c->h, &one, c->y, dy, &zero, c->bias, gin[2].data), OP,
            "cudnnConvolutionBackwardBias");
    return s;
}

static void cost(void *state, double *flops, double *bytes)
{
    const d5_conv_geometry *g = &((cconv *)state)->g;
    *flops = d5__conv_flops(g);
    *bytes = 4.0 * ((double)g->batch * (double)g->in_channels * (double)g->in_size +
                    (double)g->out_channels * (double)(g->in_channels / g->group) *
                        (double)g->kernel_size +
                    (double)g->batch * (double)g->out_channels * (double)g->out_size);
}

/* ---- FusedConv ---- */

static d5_status fused_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5__fusion f;
    d5_status s = d5__fusion_read(in, nin, attrs, &f);
    if (s == D5_OK && f.sum) s = d5__cuda_need_f32("FusedConv", in, nin, 3);
    d5_op_create_args conv = *args; /* X, W and B: Z is added after the convolution */
    if (conv.ninputs > 3) conv.ninputs = 3;
    if (s == D5_OK) s = create(&conv, state);
    if (s != D5_OK) return s;
    cconv *c = *state;
    c->f = f;
    s = d5__fusion_check_z(in, nin, &out[0]);
    if (s == D5_OK && f.relu)
        s = d5__cudnn_check(cudnnCreateActivationDescriptor(&c->relu), "FusedConv",
                            "cudnnCreateActivationDescriptor");
    if (s == D5_OK && f.relu)
        s = d5__cudnn_check(
            cudnnSetActivationDescriptor(c->relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
            "FusedConv", "cudnnSetActivationDescriptor");
    if (s != D5_OK) {
        destroy(c);
        *state = NULL;
    }
    return s;
}

static d5_status fused_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    cconv *c = state;
    const float one = 1.0f, zero = 0.0f;
    float beta = 0.0f;
    d5_status s = d5__cuda_call_on_device("FusedConv", call);
    if (s == D5_OK && c->f.sum) {
        beta = 1.0f;
        if (in[3].data != out[0].data)
            s = d5__cuda_check(
                cudaMemcpyAsync(out[0].data, in[3].data,
                                (size_t)d5_tensor_desc_numel(&out[0].desc) * sizeof(float),
                                cudaMemcpyDeviceToDevice, 0),
                "FusedConv", "cudaMemcpyAsync of Z");
    }
    if (s == D5_OK)
        s = d5__cudnn_check(cudnnConvolutionForward(c->h, &one, c->x, in[0].data, c->w, in[1].data,
                                                    c->conv, c->fwd, c->ws, c->ws_size, &beta, c->y,
                                                    out[0].data),
                            "FusedConv", "cudnnConvolutionForward");
    if (s == D5_OK && c->g.has_bias)
        s = d5__cudnn_check(
            cudnnAddTensor(c->h, &one, c->bias, in[2].data, &one, c->y, out[0].data), "FusedConv",
            "cudnnAddTensor (bias)");
    if (s == D5_OK && c->f.relu)
        s = d5__cudnn_check(cudnnActivationForward(c->h, c->relu, &one, c->y, out[0].data, &zero,
                                                   c->y, out[0].data),
                            "FusedConv", "cudnnActivationForward (ReLU)");
    return s;
}

/* clang-format off */
const d5_op_desc d5__op_cuda_FusedConv = {
    D5_CUDA_OP("FusedConv", D5_OP_Z_IN_PLACE, 2, 4, 1, 1), .create = fused_create,
    .forward = fused_forward, .destroy = destroy, .cost = cost};

const d5_op_desc d5__op_cuda_Conv = {
    D5_CUDA_OP("Conv", D5_OP_HAS_BACKWARD, 2, 3, 1, 1), .create = create, .forward = forward,
    .backward = backward, .destroy = destroy, .cost = cost};
/* clang-format on */
