/* Reductions over a set of axes, and the losses' reduction attribute. */
#include "reduce.h"

#include <string.h>

d5_status d5__reduce_plan(const char *op, const d5_tensor_desc *in, const int64_t *axes,
                          int64_t naxes, int keepdims, int noop_with_empty_axes, d5_reduce *plan,
                          d5_tensor_desc *out)
{
    d5_reduce r;
    memset(&r, 0, sizeof r);
    r.in = *in;
    for (int64_t k = 0; k < naxes; k++) {
        int32_t a;
        d5_status s = d5__axis(op, axes[k], in->ndim, &a);
        if (s != D5_OK) return s;
        if (r.reduced[a])
            return d5_error(D5_ERR_INVALID, "%s: axis %lld appears twice in axes", op,
                            (long long)axes[k]);
        r.reduced[a] = 1;
    }
    if (naxes == 0 && !noop_with_empty_axes)
        for (int32_t d = 0; d < in->ndim; d++) r.reduced[d] = 1;
    r.count = 1;
    out->ndim = 0;
    for (int32_t d = 0; d < in->ndim; d++) {
        if (!r.reduced[d])
            out->shape[out->ndim++] = in->shape[d];
        else {
            r.count *= in->shape[d];
            if (keepdims) out->shape[out->ndim++] = 1;
        }
    }
    *plan = r;
    return D5_OK;
}

int64_t d5__reduce_index(const d5_reduce *plan, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int32_t d = plan->in.ndim - 1; d >= 0; d--) {
        int64_t coord = i % plan->in.shape[d];
        i /= plan->in.shape[d];
        if (plan->reduced[d]) continue;
        idx += coord * stride;
        stride *= plan->in.shape[d];
    }
    return idx;
}

/* Checks that the axes come the way the opset says: input 1 from opset 13
 * (ReduceSum) or 18 (the other reductions), the attribute before. */
static d5_status check_axes_form(const char *op, int32_t nin, const d5_attrs *attrs)
{
    int64_t opset, axes_input_opset = strcmp(op, "ReduceSum") == 0 ? 13 : 18;
    if (!d5_attrs_find(attrs, D5__OPSET_ATTR)) return D5_OK; /* created directly: either form */
    d5_status s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    if (opset >= axes_input_opset) {
        if (d5_attrs_find(attrs, "axes"))
            return d5_error(D5_ERR_INVALID,
                            "%s: opset %lld takes axes as input 1, not as an attribute", op,
                            (long long)opset);
        return D5_OK;
    }
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "%s: opset %lld takes 1 input (axes is an attribute), got %d", op,
                        (long long)opset, (int)nin);
    if (d5_attrs_find(attrs, "noop_with_empty_axes"))
        return d5_error(D5_ERR_INVALID,
                        "%s: noop_with_empty_axes is an attribute of opset %lld and later, not "
                        "of opset %lld",
                        op, (long long)axes_input_opset, (long long)opset);
    return D5_OK;
}

d5_status d5__reduce_create(const char *op, d5_dtypes types, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "%s: input 0 (data) is required", op);
    int64_t keepdims, noop, axes[D5_MAX_DIMS], naxes = 0;
    const int64_t *attr_axes;
    int64_t nattr;
    d5_status s = d5__need_types(op, in, nin, 0, types);
    if (s == D5_OK) s = check_axes_form(op, nin, attrs);
    if (s == D5_OK) s = d5_attrs_int(attrs, "keepdims", 1, &keepdims);
    if (s == D5_OK) s = d5_attrs_int(attrs, "noop_with_empty_axes", 0, &noop);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "axes", &attr_axes, &nattr);
    if (s != D5_OK) return s;
    if (d5__has_input(in, nin, 1)) {
        if (attr_axes)
            return d5_error(D5_ERR_INVALID, "%s: axes given both as an attribute and as input 1",
                            op);
        s = d5__const_ints(op, in, nin, 1, "axes", axes, D5_MAX_DIMS, &naxes);
        if (s != D5_OK) return s;
    } else if (attr_axes) {
        if (nattr > D5_MAX_DIMS)
            return d5_error(D5_ERR_INVALID, "%s: axes has %lld values, at most %d allowed", op,
                            (long long)nattr, D5_MAX_DIMS);
        memcpy(axes, attr_axes, (size_t)nattr * sizeof *axes);
        naxes = nattr;
    }
    d5_reduce plan;
    s = d5__reduce_plan(op, &in[0].desc, axes, naxes, keepdims != 0, noop != 0, &plan, &out[0]);
    if (s != D5_OK) return s;
    return d5__ref_state(state, &plan, sizeof plan, op);
}

d5_status d5__reduce_sum_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_reduce *r = state;
    for (int64_t o = 0; o < out[0].numel; o++) out[0].data[o] = 0;
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[d5__reduce_index(r, i)] += in[0].data[i];
    if (r->mean)
        for (int64_t o = 0; o < out[0].numel; o++) out[0].data[o] /= (double)r->count;
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

d5_status d5__reduce_sum_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const d5_reduce *r = state;
    double n = r->mean ? (double)r->count : 1; /* x / 1 is x exactly */
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] += gout[0].data[d5__reduce_index(r, i)] / n;
    return D5_OK;
}

/* One addition per input element, and for the mean a division per output
 * element. */
double d5__reduce_sum_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    const d5_tensor_desc *out = shapes->outputs;
    const d5_reduce *r = state;
    return (double)d5_tensor_desc_numel(&in[0]) +
           (r->mean ? (double)d5_tensor_desc_numel(&out[0]) : 0);
}

d5_status d5__loss_reduction(const char *op, const d5_attrs *attrs, d5_loss_reduction *out)
{
    const char *r;
    d5_status s = d5_attrs_string(attrs, "reduction", "mean", &r);
    if (s != D5_OK) return s;
    if (strcmp(r, "none") == 0)
        *out = D5_LOSS_NONE;
    else if (strcmp(r, "sum") == 0)
        *out = D5_LOSS_SUM;
    else if (strcmp(r, "mean") == 0)
        *out = D5_LOSS_MEAN;
    else
        return d5_error(D5_ERR_INVALID, "%s: reduction '%s' is not none, sum or mean", op, r);
    return D5_OK;
}
