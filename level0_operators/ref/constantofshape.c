/* ConstantOfShape (ONNX opset 9, types widened in 20): a tensor of the shape
 * given by the 1-d int64 input (known at create; an empty one gives a scalar)
 * filled with the one element of the TENSOR attribute value, whose data type
 * the output takes (default: a float32 0). No gradient.
 * https://onnx.ai/onnx/operators/onnx__ConstantOfShape.html */
#include "util.h"

/* The fill value, as a double. */
static d5_status fill_value(const d5_attrs *attrs, double *v, int32_t *dtype)
{
    *v = 0;
    *dtype = D5_F32;
    const d5_attr *a = d5_attrs_find(attrs, "value");
    if (!a) return D5_OK;
    const d5_tensor *t = a->tensor;
    if (a->type != D5_ATTR_TENSOR || !t)
        return d5_error(D5_ERR_INVALID, "ConstantOfShape: attribute 'value' must be a tensor");
    d5_dtype dt = (d5_dtype)t->desc.dtype;
    if (d5_dtype_size(dt) == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "ConstantOfShape: attribute 'value' has data type %s",
                        d5_dtype_name(dt));
    if (d5_tensor_desc_numel(&t->desc) != 1 || !t->data)
        return d5_error(D5_ERR_INVALID,
                        "ConstantOfShape: attribute 'value' has %lld elements, expected 1",
                        (long long)d5_tensor_desc_numel(&t->desc));
    *dtype = dt;
    return d5_convert(t->data, dt, v, D5_F64, 1);
}

static d5_status constantofshape_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t shape[D5_MAX_DIMS], n;
    double v;
    int32_t dtype;
    d5_status s = d5__const_ints("ConstantOfShape", in, nin, 0, "input", shape, D5_MAX_DIMS, &n);
    if (s == D5_OK) s = fill_value(attrs, &v, &dtype);
    if (s != D5_OK) return s;
    if (in[0].desc.ndim != 1)
        return d5_error(D5_ERR_INVALID, "ConstantOfShape: input 0 (input) must be 1-d, got %d-d",
                        (int)in[0].desc.ndim);
    for (int64_t i = 0; i < n; i++)
        if (shape[i] < 0)
            return d5_error(D5_ERR_INVALID, "ConstantOfShape: input[%lld] is %lld, expected >= 0",
                            (long long)i, (long long)shape[i]);
    out[0].dtype = dtype;
    out[0].ndim = (int32_t)n;
    for (int64_t i = 0; i < n; i++) out[0].shape[i] = shape[i];
    return d5__ref_state(state, &v, sizeof v, "ConstantOfShape");
}

static d5_status constantofshape_forward(void *state, const d5_ref_call *call)
{
    d5_rt *out = call->outputs;
    double v = *(const double *)state;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = v;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(ConstantOfShape, 1, 1, 1, 1, constantofshape_create,
                            constantofshape_forward, NULL, NULL);
