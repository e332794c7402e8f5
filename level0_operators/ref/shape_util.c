/* Index arithmetic shared by the reference shape operators. */
#include "shape_util.h"

#include <string.h>

void d5__unravel(const d5_tensor_desc *d, int64_t i, int64_t *coord)
{
    for (int32_t k = d->ndim - 1; k >= 0; k--) {
        coord[k] = i % d->shape[k];
        i /= d->shape[k];
    }
}

d5_status d5__need_input(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         const char *what)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, i, what);
    return D5_OK;
}

d5_status d5__resolve_axes(const char *op, const int64_t *axes, int64_t n, int32_t ndim,
                           int32_t *out)
{
    for (int64_t k = 0; k < n; k++) {
        d5_status s = d5__axis(op, axes[k], ndim, &out[k]);
        if (s != D5_OK) return s;
        for (int64_t j = 0; j < k; j++)
            if (out[j] == out[k])
                return d5_error(D5_ERR_INVALID, "%s: axis %d is given twice (as %lld and %lld)", op,
                                (int)out[k], (long long)axes[j], (long long)axes[k]);
    }
    return D5_OK;
}

void d5__axis_block(const d5_tensor_desc *shape, int32_t axis, int64_t offset, int64_t len,
                    double *whole, double *part, int to_whole)
{
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= shape->shape[d];
    for (int32_t d = axis + 1; d < shape->ndim; d++) inner *= shape->shape[d];
    int64_t row = shape->shape[axis] * inner; /* one outer step of whole */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < len * inner; k++) {
            double *w = &whole[o * row + offset * inner + k], *p = &part[o * len * inner + k];
            if (to_whole)
                *w = *p;
            else
                *p = *w;
        }
}

d5_status d5__copy_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = in[0].data[i];
    return D5_OK;
}

d5_status d5__copy_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    (void)state;
    if (gin[0].data)
        for (int64_t i = 0; i < gin[0].numel; i++) gin[0].data[i] += gout[0].data[i];
    return D5_OK;
}

static d5_status squeeze_axes(const char *op, const d5_op_create_args *args, int required,
                              int64_t *axes, int64_t *n)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    int64_t opset;
    const int64_t *attr;
    int64_t nattr;
    d5_status s = d5__need_input(op, in, nin, 0, "data");
    if (s == D5_OK) s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "axes", &attr, &nattr);
    if (s != D5_OK) return s;
    *n = -1;
    if (opset >= 13) {
        if (attr)
            return d5_error(D5_ERR_INVALID,
                            "%s: opset %lld takes axes as input 1, not as an attribute", op,
                            (long long)opset);
        if (!d5__has_input(in, nin, 1))
            return required ? d5_error(D5_ERR_INVALID,
                                       "%s: opset %lld takes 2 inputs (data, axes), got 1", op,
                                       (long long)opset)
                            : D5_OK;
        return d5__const_ints(op, in, nin, 1, "axes", axes, D5_MAX_DIMS, n);
    }
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "%s: opset %lld takes 1 input (axes is an attribute), got %d", op,
                        (long long)opset, (int)nin);
    if (!attr)
        return required ? d5_error(D5_ERR_INVALID, "%s: opset %lld requires the attribute axes", op,
                                   (long long)opset)
                        : D5_OK;
    if (nattr > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "%s: axes has %lld values, at most %d allowed", op,
                        (long long)nattr, D5_MAX_DIMS);
    memcpy(axes, attr, (size_t)nattr * sizeof *axes);
    *n = nattr;
    return D5_OK;
}

d5_status d5__squeeze_create(const char *op, const d5_op_create_args *args, int required,
                             d5__axes_shape shape)
{
    int64_t axes[D5_MAX_DIMS], n;
    d5_status s = squeeze_axes(op, args, required, axes, &n);
    if (s != D5_OK) return s;
    return shape(&args->inputs[0].desc, axes, n, &args->outputs[0]);
}
