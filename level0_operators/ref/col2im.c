/* Col2Im (ONNX opset 18): the inverse of im2col, as torch.nn.Fold. Input 0
 * is [N, C * prod(block_shape), L], image_shape (input 1) and block_shape
 * (input 2) are int64 tensors of r >= 1 values known at create, and Y is
 * [N, C, image_shape...] of input 0's type. Along spatial axis i an image of
 * size D holds
 *   n_i = floor((D + pads[i] + pads[i + r] - dilations[i] * (block[i] - 1) - 1)
 *         / strides[i]) + 1
 * blocks, and L must be n_1 * ... * n_r (blocks in row-major order). Element
 * [n, c * prod(block) + k, l] of input 0 adds into Y[n, c] at the position
 * block_l * strides - pads_begin + k * dilations (k and l taken apart
 * row-major over block_shape and the n_i); positions in the padding are
 * dropped. dilations and strides default to 1, pads to 0. Integer inputs sum
 * in double and wrap into their type.
 *
 * The gradient with respect to input 0 is im2col of dY: each element reads
 * back the position it added into (0 for the padding).
 * https://onnx.ai/onnx/operators/onnx__Col2Im.html */
#include "spatial.h"

#define MAX_AXES (D5_MAX_DIMS - 2)

typedef struct col2im {
    int32_t r;
    int64_t batch, channels;
    int64_t image[MAX_AXES], block[MAX_AXES], blocks[MAX_AXES];
    int64_t dilation[MAX_AXES], stride[MAX_AXES], pad[MAX_AXES];
    int64_t kernel, count, image_size; /* prod(block), L, prod(image) */
} col2im;

/* Reads image_shape and block_shape into the state and checks them. */
static d5_status read_shapes(const d5_tensor *in, int32_t nin, col2im *c)
{
    int64_t n_image, n_block;
    d5_status s = d5__const_ints("Col2Im", in, nin, 1, "image_shape", c->image, MAX_AXES, &n_image);
    if (s == D5_OK)
        s = d5__const_ints("Col2Im", in, nin, 2, "block_shape", c->block, MAX_AXES, &n_block);
    if (s != D5_OK) return s;
    if (n_image != n_block || n_image < 1)
        return d5_error(D5_ERR_SHAPE,
                        "Col2Im: image_shape (input 1) has %lld values and block_shape (input 2) "
                        "%lld, expected the same number (one per spatial axis), at least 1",
                        (long long)n_image, (long long)n_block);
    c->r = (int32_t)n_image;
    for (int32_t i = 0; i < c->r; i++) {
        if (c->image[i] < 1 || c->block[i] < 1)
            return d5_error(D5_ERR_INVALID,
                            "Col2Im: image_shape[%d] is %lld and block_shape[%d] is %lld, both "
                            "must be positive",
                            (int)i, (long long)c->image[i], (int)i, (long long)c->block[i]);
    }
    return D5_OK;
}

static d5_status col2im_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    col2im c = {0};
    int64_t pads[2 * MAX_AXES];
    d5_status s = d5__need_types("Col2Im", in, nin, 0, D5__NUMBERS);
    if (s == D5_OK) s = read_shapes(in, nin, &c);
    if (s == D5_OK)
        s = d5__spatial_ints("Col2Im", args->attrs, "dilations", c.r, c.r, 1, 1, c.dilation);
    if (s == D5_OK)
        s = d5__spatial_ints("Col2Im", args->attrs, "strides", c.r, c.r, 1, 1, c.stride);
    if (s == D5_OK) s = d5__spatial_ints("Col2Im", args->attrs, "pads", c.r, 2 * c.r, 0, 0, pads);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 3)
        return d5_error(D5_ERR_SHAPE,
                        "Col2Im: input 0 has %d dims, expected 3 ([N, C * prod(block_shape), L])",
                        (int)x->ndim);
    c.kernel = c.count = c.image_size = 1;
    for (int32_t i = 0; i < c.r; i++) {
        int64_t span = c.image[i] + pads[i] + pads[c.r + i] - c.dilation[i] * (c.block[i] - 1) - 1;
        if (span < 0)
            return d5_error(D5_ERR_SHAPE,
                            "Col2Im: along spatial axis %d the dilated block (%lld) is larger than "
                            "the padded image (%lld)",
                            (int)i, (long long)(c.dilation[i] * (c.block[i] - 1) + 1),
                            (long long)(c.image[i] + pads[i] + pads[c.r + i]));
        c.blocks[i] = span / c.stride[i] + 1;
        c.pad[i] = pads[i];
        c.kernel *= c.block[i];
        c.count *= c.blocks[i];
        c.image_size *= c.image[i];
    }
    if (x->shape[1] % c.kernel != 0 || x->shape[2] != c.count) {
        char got[96];
        d5__shape_str(x, got, sizeof got);
        return d5_error(D5_ERR_SHAPE,
                        "Col2Im: input 0 has shape %s, expected [N, C * %lld, %lld] (C * "
                        "prod(block_shape) rows, one column per block)",
                        got, (long long)c.kernel, (long long)c.count);
    }
    c.batch = x->shape[0];
    c.channels = x->shape[1] / c.kernel;
    d5_tensor_desc *y = &args->outputs[0];
    y->ndim = c.r + 2;
    y->shape[0] = c.batch;
    y->shape[1] = c.channels;
    for (int32_t i = 0; i < c.r; i++) y->shape[2 + i] = c.image[i];
    return d5__ref_state(state, &c, sizeof c, "Col2Im");
}

/* The flat image position that block l reaches through kernel offset k; -1
 * in the padding. */
static int64_t position(const col2im *c, int64_t k, int64_t l)
{
    int64_t pos = 0, scale = 1;
    for (int32_t i = c->r - 1; i >= 0; i--) {
        int64_t at =
            (l % c->blocks[i]) * c->stride[i] - c->pad[i] + (k % c->block[i]) * c->dilation[i];
        if (at < 0 || at >= c->image[i]) return -1;
        pos += at * scale;
        scale *= c->image[i];
        k /= c->block[i];
        l /= c->blocks[i];
    }
    return pos;
}

/* Both passes. Forward scatters the columns into the image (image[at] +=
 * cols[col]); backward gathers the image's gradient into the columns'
 * (cols[col] += image[at]). The side that is read is not written. */
static void sweep(const col2im *c, double *cols, double *image, int backward)
{
    for (int64_t p = 0; p < c->batch * c->channels; p++)
        for (int64_t k = 0; k < c->kernel; k++)
            for (int64_t l = 0; l < c->count; l++) {
                int64_t at = position(c, k, l);
                if (at < 0) continue;
                int64_t col = (p * c->kernel + k) * c->count + l;
                if (backward)
                    cols[col] += image[p * c->image_size + at];
                else
                    image[p * c->image_size + at] += cols[col];
            }
}

static d5_status col2im_forward(void *state, const d5_ref_call *call)
{
    d5_rt *y = &call->outputs[0];
    for (int64_t i = 0; i < y->numel; i++) y->data[i] = 0;
    sweep(state, call->inputs[0].data, y->data, 0);
    d5__wrap_ints(y);
    return D5_OK;
}

static d5_status col2im_backward(void *state, const d5_ref_call *call)
{
    if (call->grad_inputs[0].data)
        sweep(state, call->grad_inputs[0].data, call->grad_outputs[0].data, 1);
    return D5_OK;
}

/* One addition per element of input 0. */
D5_REF_OPERATOR(Col2Im, 3, 3, 1, 1, col2im_create, col2im_forward, col2im_backward, NULL,
                d5__flops_per_input);
