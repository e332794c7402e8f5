/* Unsqueeze (ONNX opsets 1 to 21): inserts dimensions of size 1 at the
 * positions `axes` of the output (negative counts from the back of the output,
 * whose rank is the input's plus the number of axes; negative axes from
 * opset 11). From opset 13 axes is an int64 input known at create; before, it
 * is the required attribute axes, and the operator takes one input.
 * https://onnx.ai/onnx/operators/onnx__Unsqueeze.html */
#include "shape_util.h"

#include <string.h>

/* Reads axes from input 1 (opset 13 and later) or from the attribute. */
static d5_status read_axes(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, int64_t *axes,
                           int64_t *n)
{
    int64_t opset;
    const int64_t *attr;
    int64_t nattr;
    d5_status s = d5__ref_opset("Unsqueeze", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "axes", &attr, &nattr);
    if (s != D5_OK) return s;
    if (opset >= 13) {
        if (attr)
            return d5_error(D5_ERR_INVALID,
                            "Unsqueeze: opset %lld takes axes as input 1, not as an attribute",
                            (long long)opset);
        if (nin < 2)
            return d5_error(D5_ERR_INVALID,
                            "Unsqueeze: opset %lld takes 2 inputs (data, axes), "
                            "got 1",
                            (long long)opset);
        return d5__const_ints("Unsqueeze", in, nin, 1, "axes", axes, D5_MAX_DIMS, n);
    }
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Unsqueeze: opset %lld takes 1 input (axes is an attribute), got %d",
                        (long long)opset, (int)nin);
    if (!attr)
        return d5_error(D5_ERR_INVALID, "Unsqueeze: opset %lld requires the attribute axes",
                        (long long)opset);
    if (nattr > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "Unsqueeze: axes has %lld values, at most %d allowed",
                        (long long)nattr, D5_MAX_DIMS);
    memcpy(axes, attr, (size_t)nattr * sizeof *axes);
    *n = nattr;
    return D5_OK;
}

static d5_status unsqueeze_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    int64_t axes[D5_MAX_DIMS], n;
    d5_status s = d5__need_input("Unsqueeze", in, nin, 0, "data");
    if (s == D5_OK) s = read_axes(in, nin, attrs, axes, &n);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t rank = x->ndim + (int32_t)n, ax[D5_MAX_DIMS];
    if (rank > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "Unsqueeze: the output would have %d dims, at most %d",
                        (int)rank, D5_MAX_DIMS);
    for (int64_t k = 0; k < n; k++)
        if (axes[k] < -(int64_t)rank || axes[k] >= rank)
            return d5_error(D5_ERR_INVALID,
                            "Unsqueeze: axis %lld is outside [%d, %d] for a %d-d output",
                            (long long)axes[k], -(int)rank, (int)rank - 1, (int)rank);
    s = d5__resolve_axes("Unsqueeze", axes, n, rank, ax);
    if (s != D5_OK) return s;
    int one[D5_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) one[ax[k]] = 1;
    out[0].ndim = rank;
    for (int32_t d = 0, j = 0; d < rank; d++) out[0].shape[d] = one[d] ? 1 : x->shape[j++];
    return D5_OK;
}

D5_REF_OPERATOR(Unsqueeze, 1, 2, 1, 1, unsqueeze_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
