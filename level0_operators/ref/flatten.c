/* Flatten (ONNX opset 13): a 2-d view of the input, dimensions [0, axis)
 * folded into the rows and [axis, r) into the columns; axis in [-r, r]
 * (default 1), negative counting from the back.
 * https://onnx.ai/onnx/operators/onnx__Flatten.html */
#include "shape_util.h"

static d5_status flatten_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    int64_t axis;
    d5_status s = d5__need_input("Flatten", in, nin, 0, "input");
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 1, &axis);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (axis < -(int64_t)x->ndim || axis > x->ndim)
        return d5_error(D5_ERR_INVALID, "Flatten: axis %lld is outside [%d, %d] for a %d-d input",
                        (long long)axis, -(int)x->ndim, (int)x->ndim, (int)x->ndim);
    if (axis < 0) axis += x->ndim;
    int64_t rows = 1, cols = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (d < axis)
            rows *= x->shape[d];
        else
            cols *= x->shape[d];
    }
    out[0].ndim = 2;
    out[0].shape[0] = rows;
    out[0].shape[1] = cols;
    return D5_OK;
}

D5_REF_OPERATOR(Flatten, 1, 1, 1, 1, flatten_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
