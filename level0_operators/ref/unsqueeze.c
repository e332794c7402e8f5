/* Unsqueeze (ONNX opsets 1 to 21): inserts dimensions of size 1 at the
 * positions `axes` of the output (negative counts from the back of the output,
 * whose rank is the input's plus the number of axes; negative axes from
 * opset 11). From opset 13 axes is an int64 input known at create; before, it
 * is the required attribute axes, and the operator takes one input.
 * https://onnx.ai/onnx/operators/onnx__Unsqueeze.html */
#include "shape_util.h"

static d5_status unsqueeze_shape(const d5_tensor_desc *x, const int64_t *axes, int64_t n,
                                 d5_tensor_desc *y)
{
    int32_t rank = x->ndim + (int32_t)n, ax[D5_MAX_DIMS];
    if (rank > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "Unsqueeze: the output would have %d dims, at most %d",
                        (int)rank, D5_MAX_DIMS);
    for (int64_t k = 0; k < n; k++)
        if (axes[k] < -(int64_t)rank || axes[k] >= rank)
            return d5_error(D5_ERR_INVALID,
                            "Unsqueeze: axis %lld is outside [%d, %d] for a %d-d output",
                            (long long)axes[k], -(int)rank, (int)rank - 1, (int)rank);
    d5_status s = d5__resolve_axes("Unsqueeze", axes, n, rank, ax);
    if (s != D5_OK) return s;
    int one[D5_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) one[ax[k]] = 1;
    y->ndim = rank;
    for (int32_t d = 0, j = 0; d < rank; d++) y->shape[d] = one[d] ? 1 : x->shape[j++];
    return D5_OK;
}

D5_SQUEEZE_OPERATOR(Unsqueeze, 1, unsqueeze_shape);
