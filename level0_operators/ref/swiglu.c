/* SwiGLU (ONNX opset 28): Y = A * sigmoid(alpha * A) * B element-wise, the
 * Swish of the gate A times the value B; attribute alpha (default 1.0). A and
 * B are floating point, of one type and of one shape (no broadcasting); Y has
 * both. Splitting a packed projection into A and B is left to the graph.
 *
 * Gradient, with s = sigmoid(alpha * A):
 *   dA = dY * B * (s + alpha * A * s * (1 - s)),   dB = dY * A * s.
 * https://onnx.ai/onnx/operators/onnx__SwiGLU.html */
#include "util.h"

#include <math.h>

typedef struct swiglu {
    double alpha;
} swiglu;

static d5_status swiglu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    swiglu g;
    d5_status s = d5__need_float("SwiGLU", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("SwiGLU", in, nin, 1);
    if (s == D5_OK) s = d5__same_type("SwiGLU", in, nin, 1, 0);
    if (s == D5_OK) s = d5_attrs_float(args->attrs, "alpha", 1.0, &g.alpha);
    if (s != D5_OK) return s;
    if (!d5__same_shape(&in[0].desc, &in[1].desc)) {
        char a[96], b[96];
        d5__shape_str(&in[0].desc, a, sizeof a);
        d5__shape_str(&in[1].desc, b, sizeof b);
        return d5_error(D5_ERR_SHAPE,
                        "SwiGLU: A has shape %s and B %s; they must be equal (no broadcasting)", a,
                        b);
    }
    args->outputs[0] = in[0].desc;
    return d5__ref_state(state, &g, sizeof g, "SwiGLU");
}

static double sigmoid(double z)
{
    return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z));
}

static d5_status swiglu_forward(void *state, const d5_ref_call *call)
{
    const swiglu *g = state;
    const double *a = call->inputs[0].data, *b = call->inputs[1].data;
    d5_rt *out = call->outputs;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = a[i] * sigmoid(g->alpha * a[i]) * b[i];
    return D5_OK;
}

static d5_status swiglu_backward(void *state, const d5_ref_call *call)
{
    const swiglu *g = state;
    const double *a = call->inputs[0].data, *b = call->inputs[1].data;
    const double *dy = call->grad_outputs[0].data;
    d5_rt *gin = call->grad_inputs;
    for (int64_t i = 0; i < call->outputs[0].numel; i++) {
        double s = sigmoid(g->alpha * a[i]);
        if (gin[0].data) gin[0].data[i] += dy[i] * b[i] * (s + g->alpha * a[i] * s * (1 - s));
        if (gin[1].data) gin[1].data[i] += dy[i] * a[i] * s;
    }
    return D5_OK;
}

/* The sigmoid (about 4 operations) and two products per element. */
static double swiglu_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)state;
    return 6.0 * (double)d5_tensor_desc_numel(&shapes->outputs[0]);
}

D5_REF_OPERATOR(SwiGLU, 2, 2, 1, 1, swiglu_create, swiglu_forward, swiglu_backward, NULL,
                swiglu_flops);
