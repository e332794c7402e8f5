/* Index arithmetic shared by GatherElements and ScatterElements: an indices
 * tensor of the data's rank names, for each of its elements, a position along
 * `axis`; the element's other coordinates stay as they are. */
#ifndef D5_REF_ELEMENTS_H
#define D5_REF_ELEMENTS_H

#include "util.h"

/* Checks the shared inputs at create: `data` (input 0, rank >= 1) and the
 * int32 or int64 `indices` (input 1) of the same rank and no larger than data
 * in any dimension but `axis` (attribute, default 0), which it resolves. */
static inline d5_status d5__elements_check(const char *op, const d5_tensor *in, int32_t nin,
                                           const d5_attrs *attrs, int32_t *axis)
{
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i,
                            i ? "indices" : "data");
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc;
    if (ind->dtype != D5_I64 && ind->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "%s: input 1 (indices) has data type %s, expected int32 or int64", op,
                        d5_dtype_name((d5_dtype)ind->dtype));
    if (x->ndim < 1) return d5_error(D5_ERR_SHAPE, "%s: data is a scalar, expected rank >= 1", op);
    int64_t a;
    d5_status s = d5_attrs_int(attrs, "axis", 0, &a);
    if (s == D5_OK) s = d5__axis(op, a, x->ndim, axis);
    if (s != D5_OK) return s;
    char xs[96], is[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(ind, is, sizeof is);
    if (ind->ndim != x->ndim)
        return d5_error(D5_ERR_SHAPE, "%s: indices %s and data %s differ in rank", op, is, xs);
    for (int32_t d = 0; d < x->ndim; d++)
        if (d != *axis && ind->shape[d] > x->shape[d])
            return d5_error(D5_ERR_SHAPE,
                            "%s: indices %s is larger than data %s in dimension %d (only axis %d "
                            "may differ)",
                            op, is, xs, (int)d, (int)*axis);
    return D5_OK;
}

/* The flat index in data of element e of indices, or -1 with D5_ERR_RANGE set
 * when its index is outside [-n, n - 1] for the axis of size n. */
static inline int64_t d5__elements_index(const char *op, const d5_tensor_desc *data,
                                         const d5_rt *indices, int32_t axis, int64_t e)
{
    int64_t idx = (int64_t)indices->data[e], n = data->shape[axis];
    if (idx < -n || idx >= n) {
        d5_error(D5_ERR_RANGE, "%s: indices[%lld] is %lld, outside [%lld, %lld] for axis %d", op,
                 (long long)e, (long long)idx, (long long)-n, (long long)n - 1, (int)axis);
        return -1;
    }
    if (idx < 0) idx += n;
    const d5_tensor_desc *ind = indices->desc;
    int64_t flat = 0, stride = 1, rest = e;
    for (int32_t d = ind->ndim - 1; d >= 0; d--) {
        int64_t coord = rest % ind->shape[d];
        rest /= ind->shape[d];
        flat += (d == axis ? idx : coord) * stride;
        stride *= data->shape[d];
    }
    return flat;
}

#endif
