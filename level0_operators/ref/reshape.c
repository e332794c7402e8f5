/* Reshape (ONNX opset 14): the elements of `data` in a new shape read from the
 * int64 input `shape` (known at create). A 0 copies the input's dimension at
 * that index (unless allowzero = 1, where it is a real 0); one -1 is inferred
 * from the element count.
 * https://onnx.ai/onnx/operators/onnx__Reshape.html */
#include "shape_util.h"

static d5_status reshape_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    (void)state;
    int64_t allowzero, shape[D5_MAX_DIMS], n;
    d5_status s = d5__need_input("Reshape", in, nin, 0, "data");
    if (s == D5_OK) s = d5_attrs_int(attrs, "allowzero", 0, &allowzero);
    if (s == D5_OK) s = d5__const_ints("Reshape", in, nin, 1, "shape", shape, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (in[1].desc.ndim != 1)
        return d5_error(D5_ERR_INVALID, "Reshape: input 1 (shape) must be 1-d, got %d-d",
                        (int)in[1].desc.ndim);
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

D5_REF_OPERATOR(Reshape, 2, 2, 1, 1, reshape_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
