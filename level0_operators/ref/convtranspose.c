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

D5_REF_OPERATOR(ConvTranspose, 2, 3, 1, 1, convtranspose_create, d5__conv_ref_forward,
                d5__conv_ref_backward, NULL, d5__conv_ref_flops);
