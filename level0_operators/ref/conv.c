/* Conv (ONNX opset 11): N-d convolution (cross-correlation, as in every deep
 * learning framework) of X (N, C, D1..Dn) with W (M, C/group, k1..kn), plus the
 * optional bias B (M), with strides, dilations, explicit or automatic (auto_pad)
 * padding and grouped (depthwise when group = C) channels:
 *   Y[n, m, o] = B[m] + sum over c in m's group, taps k of
 *                X[n, c, o * stride + k * dilation - pad_begin] * W[m, c, k]
 * with X zero outside its bounds. Shapes and pads: conv_shape.h.
 * https://onnx.ai/onnx/operators/onnx__Conv.html */
#include "conv_shape.h"

static d5_status conv_create(const d5_op_create_args *args, void **state)
{
    return d5__conv_ref_create("Conv", d5__conv_geometry, args, state);
}

static d5_status conv_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const d5_conv_geometry *g = state;
    const double *x = in[0].data, *w = in[1].data, *b = nin > 2 ? in[2].data : NULL;
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t c0 = m / mg * cg; /* the first input channel of m's group */
            double *y = out[0].data + (n * g->out_channels + m) * g->out_size;
            for (int64_t o = 0; o < g->out_size; o++) {
                double acc = b ? b[m] : 0;
                for (int64_t c = 0; c < cg; c++) {
                    const double *xc = x + (n * g->in_channels + c0 + c) * g->in_size;
                    const double *wc = w + (m * cg + c) * g->kernel_size;
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t i = d5__conv_tap(g, o, k);
                        if (i >= 0) acc += xc[i] * wc[k];
                    }
                }
                y[o] = acc;
            }
        }
    return D5_OK;
}

/* The forward loop nest, with every multiply-add sending dY back to its two
 * factors: dX[c, i] += dY[m, o] W[m, c, k], dW[m, c, k] += dY[m, o] X[c, i];
 * dB[m] = sum of dY[., m, .]. */
static d5_status conv_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    const d5_conv_geometry *g = state;
    const double *x = in[0].data, *w = in[1].data;
    double *dx = gin[0].data, *dw = gin[1].data, *db = nin > 2 ? gin[2].data : NULL;
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t c0 = m / mg * cg;
            const double *dy = gout[0].data + (n * g->out_channels + m) * g->out_size;
            for (int64_t o = 0; o < g->out_size; o++) {
                if (db) db[m] += dy[o];
                for (int64_t c = 0; c < cg; c++) {
                    int64_t xoff = (n * g->in_channels + c0 + c) * g->in_size;
                    int64_t woff = (m * cg + c) * g->kernel_size;
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t i = d5__conv_tap(g, o, k);
                        if (i < 0) continue;
                        if (dx) dx[xoff + i] += dy[o] * w[woff + k];
                        if (dw) dw[woff + k] += dy[o] * x[xoff + i];
                    }
                }
            }
        }
    return D5_OK;
}

static double conv_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__conv_flops(state);
}

D5_REF_OPERATOR(Conv, 2, 3, 1, 1, conv_create, conv_forward, conv_backward, NULL, conv_flops);
