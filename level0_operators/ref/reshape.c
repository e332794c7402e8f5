/* Reshape (ONNX opsets 1 to 21): the elements of `data` in a new shape: from
 * opset 5 the int64 input `shape` (known at create), before it the attribute
 * shape, with one input. A 0 copies the input's dimension at that index
 * (unless allowzero = 1, opset 14, where it is a real 0); one -1 is inferred
 * from the element count.
 * https://onnx.ai/onnx/operators/onnx__Reshape.html */
#include "shape_util.h"

#include <string.h>

/* Reads the new shape: input 1 from opset 5, the attribute before. */
static d5_status read_shape(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, int64_t *shape,
                            int64_t *n)
{
    int64_t opset;
    const int64_t *attr;
    d5_status s = d5__ref_opset("Reshape", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "shape", &attr, n);
    if (s != D5_OK) return s;
    if (opset >= 5) {
        if (attr)
            return d5_error(D5_ERR_INVALID,
                            "Reshape: opset %lld takes shape as input 1, not as an attribute",
                            (long long)opset);
        if (nin < 2)
            return d5_error(D5_ERR_INVALID,
                            "Reshape: opset %lld takes 2 inputs (data, shape), got %d",
                            (long long)opset, (int)nin);
        s = d5__const_ints("Reshape", in, nin, 1, "shape", shape, D5_MAX_DIMS, n);
        if (s == D5_OK && in[1].desc.ndim != 1)
            return d5_error(D5_ERR_INVALID, "Reshape: input 1 (shape) must be 1-d, got %d-d",
                            (int)in[1].desc.ndim);
        return s;
    }
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Reshape: opset %lld takes 1 input (shape is an attribute), got %d",
                        (long long)opset, (int)nin);
    if (!attr)
        return d5_error(D5_ERR_INVALID, "Reshape: opset %lld requires the attribute shape",
                        (long long)opset);
    if (*n > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "Reshape: shape has %lld values, at most %d allowed",
                        (long long)*n, D5_MAX_DIMS);
    memcpy(shape, attr, (size_t)*n * sizeof *shape);
    return D5_OK;
}

static d5_status reshape_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    int64_t allowzero, shape[D5_MAX_DIMS], n;
    d5_status s = d5__need_input("Reshape", in, nin, 0, "data");
    if (s == D5_OK) s = d5_attrs_int(attrs, "allowzero", 0, &allowzero);
    if (s == D5_OK) s = read_shape(in, nin, attrs, shape, &n);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t infer = -1;
    int has_zero = 0;
    int64_t known = 1; /* product of the dimensions other than the -1 */
    for (int32_t i = 0; i < (int32_t)n; i++) {
        if (shape[i] == -1) {
            if (infer >= 0)
                return d5_error(D5_ERR_INVALID, "Reshape: shape has -1 at indices %d and %d",
                                (int)infer, (int)i);
            infer = i;
            continue;
        }
        if (shape[i] < -1)
            return d5_error(D5_ERR_INVALID, "Reshape: shape[%d] is %lld", (int)i,
                            (long long)shape[i]);
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                return d5_error(D5_ERR_SHAPE,
                                "Reshape: shape[%d] is 0 (copy the input dimension) but the input "
                                "has %d dims",
                                (int)i, (int)x->ndim);
            shape[i] = x->shape[i];
        }
        if (shape[i] == 0) has_zero = 1;
        if (shape[i] > 0 && known > INT64_MAX / shape[i])
            return d5_error(D5_ERR_RANGE, "Reshape: the element count of the shape overflows");
        known *= shape[i];
    }
    if (allowzero && has_zero && infer >= 0)
        return d5_error(D5_ERR_INVALID,
                        "Reshape: with allowzero = 1 the shape cannot hold both 0 and -1");
    int64_t count = d5_tensor_desc_numel(x);
    char a[96];
    d5__shape_str(x, a, sizeof a);
    if (infer >= 0) {
        if (known == 0 || count % known != 0)
            return d5_error(D5_ERR_SHAPE,
                            "Reshape: cannot infer the -1 at index %d: %lld elements of %s over "
                            "%lld",
                            (int)infer, (long long)count, a, (long long)known);
        shape[infer] = count / known;
        known = count;
    }
    out[0].ndim = (int32_t)n;
    for (int32_t i = 0; i < (int32_t)n; i++) out[0].shape[i] = shape[i];
    if (known != count) {
        char b[96];
        d5__shape_str(&out[0], b, sizeof b);
        return d5_error(D5_ERR_SHAPE, "Reshape: input %s has %lld elements, shape %s has %lld", a,
                        (long long)count, b, (long long)known);
    }
    return D5_OK;
}

D5_REF_OPERATOR(Reshape, 1, 2, 1, 1, reshape_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
