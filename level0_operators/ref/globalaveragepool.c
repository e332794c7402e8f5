/* GlobalAveragePool (ONNX opset 1): Y[n, c, 1, ..., 1] = the mean of
 * X[n, c, :, ..., :] over all spatial axes of X (N x C x D1 x ... x Dn; with
 * no spatial axis, Y = X).
 * https://onnx.ai/onnx/operators/onnx__GlobalAveragePool.html */
#include "util.h"

typedef struct gap {
    int64_t planes, size; /* N * C planes of D1 * ... * Dn elements */
} gap;

static d5_status gap_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_float("GlobalAveragePool", in, nin, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        "GlobalAveragePool: input has %d dims, expected at least 2 (N x C x ...)",
                        (int)x->ndim);
    gap g = {x->shape[0] * x->shape[1], 1};
    out[0] = *x;
    for (int32_t i = 2; i < x->ndim; i++) {
        g.size *= x->shape[i];
        out[0].shape[i] = 1;
    }
    if (g.size == 0)
        return d5_error(D5_ERR_SHAPE, "GlobalAveragePool: the spatial axes hold no element");
    return d5__ref_state(state, &g, sizeof g, "GlobalAveragePool");
}

static d5_status gap_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gap *g = state;
    for (int64_t c = 0; c < g->planes; c++) {
        double sum = 0;
        for (int64_t i = 0; i < g->size; i++) sum += in[0].data[c * g->size + i];
        out[0].data[c] = sum / (double)g->size;
    }
    return D5_OK;
}

static d5_status gap_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    const gap *g = state;
    if (!gin[0].data) return D5_OK;
    for (int64_t c = 0; c < g->planes; c++)
        for (int64_t i = 0; i < g->size; i++)
            gin[0].data[c * g->size + i] = gout[0].data[c] / (double)g->size;
    return D5_OK;
}

D5_REF_OPERATOR(GlobalAveragePool, 1, 1, 1, 1, gap_create, gap_forward, gap_backward, NULL,
                d5__flops_per_input);
