/* ConvTranspose (ONNX opset 11): the transpose (gradient with respect to the
 * input) of Conv. X (N, C, D1..Dn) is spread through W (C, M/group, k1..kn):
 * every X[n, c, i] adds X[n, c, i] * W[c, m, k] into the full result at
 * i * stride + k * dilation for each output channel m of c's group and each
 * tap k; Y is the full result (extended by output_padding) cropped by the pads,
 * plus the optional bias B (M). output_shape and auto_pad decide the pads as
 * in the specification: see conv_shape.h.
 * https://onnx.ai/onnx/operators/onnx__ConvTranspose.html */
#include "conv_shape.h"

static d5_status convtranspose_create(const d5_op_create_args *args, void **state)
{
    return d5__conv_ref_create("ConvTranspose", d5__conv_transpose_geometry, args, state);
}

static d5_status convtranspose_forward(void *state, const d5_ref_call *call)
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
            for (int64_t o = 0; o < g->out_size; o++) y[o] = b ? b[m] : 0;
            for (int64_t c = 0; c < cg; c++) {
                const double *xc = x + (n * g->in_channels + c0 + c) * g->in_size;
                const double *wc = w + ((c0 + c) * mg + m % mg) * g->kernel_size;
                for (int64_t i = 0; i < g->in_size; i++)
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t o = d5__conv_tap(g, i, k);
                        if (o >= 0) y[o] += xc[i] * wc[k];
                    }
            }
        }
    return D5_OK;
}

/* The forward loop nest run backwards: dX[c, i] += dY[m, o] W[c, m, k],
 * dW[c, m, k] += X[c, i] dY[m, o]; dB[m] = sum of dY[., m, .]. */
static d5_status convtranspose_backward(void *state, const d5_ref_call *call)
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
            if (db)
                for (int64_t o = 0; o < g->out_size; o++) db[m] += dy[o];
            for (int64_t c = 0; c < cg; c++) {
                int64_t xoff = (n * g->in_channels + c0 + c) * g->in_size;
                int64_t woff = ((c0 + c) * mg + m % mg) * g->kernel_size;
                for (int64_t i = 0; i < g->in_size; i++)
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t o = d5__conv_tap(g, i, k);
                        if (o < 0) continue;
                        if (dx) dx[xoff + i] += dy[o] * w[woff + k];
                        if (dw) dw[woff + k] += x[xoff + i] * dy[o];
                    }
            }
        }
    return D5_OK;
}

static double convtranspose_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__conv_flops(state);
}

D5_REF_OPERATOR(ConvTranspose, 2, 3, 1, 1, convtranspose_create, convtranspose_forward,
                convtranspose_backward, NULL, convtranspose_flops);
