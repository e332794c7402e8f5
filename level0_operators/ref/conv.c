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

D5_REF_OPERATOR(Conv, 2, 3, 1, 1, conv_create, d5__conv_ref_forward, d5__conv_ref_backward, NULL,
                d5__conv_ref_flops);
