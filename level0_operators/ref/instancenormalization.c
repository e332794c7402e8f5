/* InstanceNormalization (ONNX opset 6; opset 22 only adds data types):
 *     y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c]
 * where mean and var (biased) are taken per sample n and channel c over the
 * spatial dimensions of an input (N, C, D1, ..., Dk); scale and B are (C).
 * Attribute epsilon (default 1e-5). Inputs are float32 or float64 of one data
 * type.
 *
 * Gradients, with xhat = (x - mean) * inv, inv = 1 / sqrt(var + epsilon), M the
 * spatial size and dxhat = dy * scale[c]:
 *     dx = inv / M * (M * dxhat - sum(dxhat) - xhat * sum(dxhat * xhat))
 *     dscale[c] = sum over n and space of dy * xhat;  dB[c] = sum of dy.
 * https://onnx.ai/onnx/operators/onnx__InstanceNormalization.html */
#include "util.h"

#include <math.h>

typedef struct instnorm {
    int64_t n, c, m; /* samples, channels, spatial size */
    double epsilon;
} instnorm;

static d5_status instnorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    static const char *const names[3] = {"input", "scale", "B"};
    for (int32_t i = 0; i < 3; i++) {
        d5_status s = d5__need_float("InstanceNormalization", in, nin, i);
        if (s != D5_OK) return s;
        if (in[i].desc.dtype != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID,
                            "InstanceNormalization: %s has data type %s but input has %s", names[i],
                            d5_dtype_name((d5_dtype)in[i].desc.dtype),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
    }
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        "InstanceNormalization: input has %d dims, expected (N, C, D1, ...)",
                        (int)x->ndim);
    for (int32_t i = 1; i < 3; i++)
        if (in[i].desc.ndim != 1 || in[i].desc.shape[0] != x->shape[1]) {
            char got[96];
            d5__shape_str(&in[i].desc, got, sizeof got);
            return d5_error(D5_ERR_SHAPE,
                            "InstanceNormalization: %s has shape %s, expected [%lld] (one per "
                            "channel)",
                            names[i], got, (long long)x->shape[1]);
        }
    instnorm p = {x->shape[0], x->shape[1], 1, 0};
    for (int32_t d = 2; d < x->ndim; d++) p.m *= x->shape[d];
    d5_status s = d5_attrs_float(attrs, "epsilon", 1e-5, &p.epsilon);
    if (s != D5_OK) return s;
    out[0] = *x;
    return d5__ref_state(state, &p, sizeof p, "InstanceNormalization");
}

/* Mean and 1 / sqrt(var + epsilon) of one (n, c) slice of m elements. */
static void moments(const instnorm *p, const double *x, double *mean, double *inv)
{
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < p->m; k++) sum += x[k];
    *mean = p->m ? sum / (double)p->m : 0;
    for (int64_t k = 0; k < p->m; k++) sq += (x[k] - *mean) * (x[k] - *mean);
    *inv = 1 / sqrt((p->m ? sq / (double)p->m : 0) + p->epsilon);
}

static d5_status instnorm_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const instnorm *p = state;
    for (int64_t s = 0; s < p->n * p->c; s++) {
        int64_t c = s % p->c;
        const double *x = in[0].data + s * p->m;
        double *y = out[0].data + s * p->m, mean, inv;
        moments(p, x, &mean, &inv);
        for (int64_t k = 0; k < p->m; k++)
            y[k] = in[1].data[c] * (x[k] - mean) * inv + in[2].data[c];
    }
    return D5_OK;
}

static d5_status instnorm_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const instnorm *p = state;
    double m = (double)p->m;
    for (int64_t s = 0; s < p->n * p->c; s++) {
        int64_t c = s % p->c;
        const double *x = in[0].data + s * p->m, *dy = gout[0].data + s * p->m;
        double mean, inv, sum_dy = 0, sum_dy_xhat = 0;
        moments(p, x, &mean, &inv);
        for (int64_t k = 0; k < p->m; k++) {
            sum_dy += dy[k];
            sum_dy_xhat += dy[k] * (x[k] - mean) * inv;
        }
        if (gin[1].data) gin[1].data[c] += sum_dy_xhat;
        if (gin[2].data) gin[2].data[c] += sum_dy;
        if (!gin[0].data) continue;
        double scale = in[1].data[c], *dx = gin[0].data + s * p->m;
        for (int64_t k = 0; k < p->m; k++) {
            double xhat = (x[k] - mean) * inv;
            dx[k] += scale * inv / m * (m * dy[k] - sum_dy - xhat * sum_dy_xhat);
        }
    }
    return D5_OK;
}

static double instnorm_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return 7.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(InstanceNormalization, 3, 3, 1, 1, instnorm_create, instnorm_forward,
                instnorm_backward, NULL, instnorm_flops);
