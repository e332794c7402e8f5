/* Squeeze (ONNX opsets 1 to 21): removes dimensions of size 1: those listed in
 * axes (negative counts from the back, from opset 11; each must have size 1),
 * or all of them when axes is not given. From opset 13 axes is the optional
 * int64 input 1, known at create; before, it is the optional attribute axes,
 * and the operator takes one input.
 * https://onnx.ai/onnx/operators/onnx__Squeeze.html */
#include "shape_util.h"

static d5_status squeeze_shape(const d5_tensor_desc *x, const int64_t *axes, int64_t n,
                               d5_tensor_desc *y)
{
    int drop[D5_MAX_DIMS] = {0};
    if (n >= 0) {
        int32_t ax[D5_MAX_DIMS];
        d5_status s = d5__resolve_axes("Squeeze", axes, n, x->ndim, ax);
        if (s != D5_OK) return s;
        for (int64_t k = 0; k < n; k++) {
            if (x->shape[ax[k]] != 1)
                return d5_error(D5_ERR_SHAPE, "Squeeze: axis %lld has size %lld, not 1",
                                (long long)axes[k], (long long)x->shape[ax[k]]);
            drop[ax[k]] = 1;
        }
    } else {
        for (int32_t d = 0; d < x->ndim; d++) drop[d] = x->shape[d] == 1;
    }
    y->ndim = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (!drop[d]) y->shape[y->ndim++] = x->shape[d];
    return D5_OK;
}

D5_SQUEEZE_OPERATOR(Squeeze, 0, squeeze_shape);
