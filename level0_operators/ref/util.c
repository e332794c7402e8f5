/* Shape helpers shared by the reference operators. */
#include "util.h"

#include <math.h>
#include <stdio.h>

void d5__shape_str(const d5_tensor_desc *d, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < d->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                                 (long long)d->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

int d5__same_shape(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

d5_status d5__need_not_negative(const char *op, const char *name, int64_t value)
{
    if (value < 0)
        return d5_error(D5_ERR_INVALID, "%s: %s is %lld, must be >= 0", op, name, (long long)value);
    return D5_OK;
}

d5_status d5__broadcast(const char *op, const d5_tensor_desc *const *in, int32_t n,
                        d5_tensor_desc *out)
{
    int32_t nd = 0;
    for (int32_t k = 0; k < n; k++)
        if (in[k]->ndim > nd) nd = in[k]->ndim;
    int64_t shape[D5_MAX_DIMS];
    for (int32_t d = 0; d < nd; d++) {
        int64_t size = 1;
        for (int32_t k = 0; k < n; k++) {
            int32_t j = d - (nd - in[k]->ndim);
            if (j < 0) continue;
            int64_t s = in[k]->shape[j];
            if (s == size || s == 1) continue;
            if (size != 1) {
                char a[96], b[96];
                d5__shape_str(in[0], a, sizeof a);
                d5__shape_str(in[k], b, sizeof b);
                return d5_error(
                    D5_ERR_SHAPE,
                    "%s: shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)", op, a, b,
                    (int)d, (long long)size, (long long)s);
            }
            size = s;
        }
        shape[d] = size;
    }
    out->ndim = nd;
    for (int32_t d = 0; d < nd; d++) out->shape[d] = shape[d];
    return D5_OK;
}

int64_t d5__broadcast_index(const d5_tensor_desc *out, const d5_tensor_desc *in, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int32_t d = out->ndim - 1, j = in->ndim - 1; d >= 0; d--, j--) {
        int64_t coord = i % out->shape[d];
        i /= out->shape[d];
        if (j < 0) continue;
        if (in->shape[j] != 1) idx += coord * stride;
        stride *= in->shape[j];
    }
    return idx;
}

void d5__strides(const d5_tensor_desc *d, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t i = d->ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= d->shape[i];
    }
}

d5_status d5__axis(const char *op, int64_t axis, int32_t ndim, int32_t *out)
{
    if (axis < -(int64_t)ndim || axis >= ndim)
        return d5_error(D5_ERR_INVALID, "%s: axis %lld is outside [%d, %d] for a %d-d input", op,
                        (long long)axis, -(int)ndim, (int)ndim - 1, (int)ndim);
    *out = (int32_t)(axis < 0 ? axis + ndim : axis);
    return D5_OK;
}

void d5__types_str(d5_dtypes types, char *buf, size_t size)
{
    int32_t total = 0, k = 0;
    for (int32_t t = D5_DTYPE_INVALID + 1; t < D5_DTYPE_COUNT; t++) total += d5__in_types(t, types);
    size_t used = 0;
    if (size) buf[0] = '\0';
    for (int32_t t = D5_DTYPE_INVALID + 1; t < D5_DTYPE_COUNT && used < size; t++) {
        if (!d5__in_types(t, types)) continue;
        const char *sep = k == 0 ? "" : k == total - 1 ? " or " : ", ";
        used += (size_t)snprintf(buf + used, size - used, "%s%s", sep, d5_dtype_name((d5_dtype)t));
        k++;
    }
}

d5_status d5__need_types(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         d5_dtypes types)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d is required", op, (int)i);
    if (d5__in_types(in[i].desc.dtype, types)) return D5_OK;
    char expected[192];
    if (types == D5__NUMBERS)
        snprintf(expected, sizeof expected, "a numeric data type (not bool)");
    else
        d5__types_str(types, expected, sizeof expected);
    return d5_error(D5_ERR_UNSUPPORTED, "%s: input %d has data type %s, expected %s", op, (int)i,
                    d5_dtype_name((d5_dtype)in[i].desc.dtype), expected);
}

d5_status d5__need_float(const char *op, const d5_tensor *in, int32_t nin, int32_t i)
{
    return d5__need_types(op, in, nin, i, D5__FLOATS);
}

d5_status d5__same_type(const char *op, const d5_tensor *in, int32_t nin, int32_t i, int32_t j)
{
    if (!d5__has_input(in, nin, i) || in[i].desc.dtype == in[j].desc.dtype) return D5_OK;
    return d5_error(D5_ERR_INVALID, "%s: input %d has data type %s, input %d %s", op, (int)i,
                    d5_dtype_name((d5_dtype)in[i].desc.dtype), (int)j,
                    d5_dtype_name((d5_dtype)in[j].desc.dtype));
}

double d5__int_wrap(double x, int32_t dtype)
{
    if (!d5__is_int(dtype) || !isfinite(x)) return x;
    double range = ldexp(1.0, 8 * (int)d5_dtype_size((d5_dtype)dtype));
    int is_signed = d5__in_types(dtype, D5__SIGNED);
    x = trunc(x);
    if (x >= (is_signed ? -range / 2 : 0) && x < (is_signed ? range / 2 : range)) return x;
    double r = fmod(x, range); /* exact; in (-range, range) with x's sign */
    if (r < 0) r += range;
    return is_signed && r >= range / 2 ? r - range : r;
}

void d5__wrap_ints(d5_rt *t)
{
    int32_t dtype = t->desc->dtype;
    if (!d5__is_int(dtype) || !t->data) return;
    for (int64_t i = 0; i < t->numel; i++) t->data[i] = d5__int_wrap(t->data[i], dtype);
}

int d5__has_input(const d5_tensor *in, int32_t nin, int32_t i)
{
    return i < nin && in[i].desc.dtype != D5_DTYPE_INVALID;
}

/* Checks input i of the d5__const_* readers: given, of a type in `types`
 * (`expected` in the message), known at create and with at most `max`
 * values, which it counts. */
static d5_status const_input(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                             const char *what, d5_dtypes types, const char *expected, int64_t max,
                             int64_t *count)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, i, what);
    const d5_tensor *t = &in[i];
    if (!d5__in_types(t->desc.dtype, types))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) has data type %s, expected %s", op, i,
                        what, d5_dtype_name((d5_dtype)t->desc.dtype), expected);
    if (!t->data)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: input %d (%s) must be a constant: its values decide the output shape",
                        op, i, what);
    *count = d5_tensor_desc_numel(&t->desc);
    if (*count > max)
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) has %lld values, at most %lld allowed",
                        op, i, what, (long long)*count, (long long)max);
    return D5_OK;
}

d5_status d5__const_ints(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         const char *what, int64_t *out, int64_t max, int64_t *n)
{
    int64_t count = 0;
    d5_status s = const_input(op, in, nin, i, what, D5__DT(D5_I64) | D5__DT(D5_I32),
                              "int64 or int32", max, &count);
    if (s != D5_OK) return s;
    const d5_tensor *t = &in[i];
    for (int64_t k = 0; k < count; k++)
        out[k] =
            t->desc.dtype == D5_I64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
    *n = count;
    return D5_OK;
}

/* The values of a constant input of a type in `types`, as doubles. */
static d5_status const_doubles(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                               const char *what, d5_dtypes types, const char *expected, double *out,
                               int64_t max, int64_t *n)
{
    int64_t count = 0;
    d5_status s = const_input(op, in, nin, i, what, types, expected, max, &count);
    if (s == D5_OK)
        s = d5_convert(in[i].data, (d5_dtype)in[i].desc.dtype, out, D5_F64, (size_t)count);
    if (s == D5_OK) *n = count;
    return s;
}

d5_status d5__const_floats(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                           const char *what, double *out, int64_t max, int64_t *n)
{
    return const_doubles(op, in, nin, i, what, D5__FLOATS, "float32, float64, float16 or bfloat16",
                         out, max, n);
}

d5_status d5__const_numbers(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                            const char *what, double *out, int64_t max, int64_t *n)
{
    return const_doubles(op, in, nin, i, what, D5__NUMBERS, "a numeric data type (not bool)", out,
                         max, n);
}

d5_status d5__ref_opset(const char *op, const d5_attrs *attrs, int64_t def, int64_t *opset)
{
    d5_status s = d5_attrs_int(attrs, D5__OPSET_ATTR, def, opset);
    if (s != D5_OK) return s;
    if (*opset < 1)
        return d5_error(D5_ERR_INVALID, "%s: attribute %s is %lld, expected an opset version >= 1",
                        op, D5__OPSET_ATTR, (long long)*opset);
    return D5_OK;
}

d5_status d5__axis_view_create(const char *op, const d5_tensor *in, int32_t nin,
                               const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    int64_t axis, opset;
    int32_t ax = 0;
    d5_status s = d5__need_float(op, in, nin, 0);
    if (s == D5_OK) s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", opset < 13 ? 1 : -1, &axis);
    if (s == D5_OK) s = d5__axis(op, axis, in[0].desc.ndim, &ax);
    if (s != D5_OK) return s;
    d5_axis_view v = {1, in[0].desc.shape[ax], 1};
    for (int32_t d = 0; d < ax; d++) v.outer *= in[0].desc.shape[d];
    for (int32_t d = ax + 1; d < in[0].desc.ndim; d++) v.inner *= in[0].desc.shape[d];
    if (opset < 13) { /* the 2-d coercion: one softmax over all of shape[axis:] */
        v.n *= v.inner;
        v.inner = 1;
    }
    out[0] = in[0].desc;
    return d5__ref_state(state, &v, sizeof v, op);
}

d5_status d5__broadcast_create(const char *op, const d5_tensor *in, int32_t nin, int float_only,
                               d5_tensor_desc *out)
{
    out[0] = in[0].desc;
    for (int32_t k = 0; k < nin; k++) {
        d5_status s = D5_OK;
        if (float_only)
            s = d5__need_float(op, in, nin, k);
        else if (!d5__has_input(in, nin, k))
            s = d5_error(D5_ERR_INVALID, "%s: input %d is required", op, (int)k);
        else if (in[k].desc.dtype == D5_BOOL)
            s = d5_error(D5_ERR_INVALID, "%s: input %d is bool, expected a numeric data type", op,
                         (int)k);
        if (s != D5_OK) return s;
        if (in[k].desc.dtype != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "%s: input %d has data type %s, input 0 %s", op, (int)k,
                            d5_dtype_name((d5_dtype)in[k].desc.dtype),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
        d5_tensor_desc so_far = out[0];
        const d5_tensor_desc *both[2] = {&so_far, &in[k].desc};
        s = d5__broadcast(op, both, 2, &out[0]);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5__sum_create(const d5_sum_op *op, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    (void)attrs;
    *state = (void *)op; /* read only */
    return d5__broadcast_create(op->name, in, nin, 1, out);
}

d5_status d5__sum_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    double n = ((const d5_sum_op *)state)->mean ? nin : 1;
    for (int64_t i = 0; i < out[0].numel; i++) {
        double acc = 0;
        for (int32_t k = 0; k < nin; k++)
            acc += in[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)];
        out[0].data[i] = acc / n;
    }
    return D5_OK;
}

d5_status d5__sum_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    double n = ((const d5_sum_op *)state)->mean ? nin : 1;
    for (int32_t k = 0; k < nin; k++)
        if (gin[k].data)
            for (int64_t i = 0; i < out[0].numel; i++)
                gin[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)] += gout[0].data[i] / n;
    return D5_OK;
}

double d5__sum_flops(void *state, const d5_ref_shapes *shapes)
{
    int32_t nin = shapes->ninputs;
    const d5_tensor_desc *out = shapes->outputs;
    int32_t adds = ((const d5_sum_op *)state)->mean ? nin : nin - 1;
    return (double)adds * (double)d5_tensor_desc_numel(&out[0]);
}

double d5__flops_per_input(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return (double)d5_tensor_desc_numel(&in[0]);
}

double d5__softmax_flops(void *state, const d5_ref_shapes *shapes)
{
    return 5.0 * d5__flops_per_input(state, shapes);
}

d5_status d5__axis_forward(void *state, const d5_ref_call *call, d5_axis_row_fn row)
{
    const d5_axis_view *g = state;
    for (int64_t r = 0; r < g->outer * g->inner; r++) {
        int64_t base = d5__axis_row(g, r);
        row(call->inputs[0].data + base, call->outputs[0].data + base, g->n, g->inner);
    }
    return D5_OK;
}

d5_status d5__axis_backward(void *state, const d5_ref_call *call, d5_axis_grad_fn grad)
{
    const d5_axis_view *g = state;
    if (!call->grad_inputs[0].data) return D5_OK;
    for (int64_t r = 0; r < g->outer * g->inner; r++) {
        int64_t base = d5__axis_row(g, r);
        grad(call->outputs[0].data + base, call->grad_outputs[0].data + base,
             call->grad_inputs[0].data + base, g->n, g->inner);
    }
    return D5_OK;
}

int64_t d5__index_tuple(const char *op, const double *indices, int64_t t, const int64_t *dims,
                        int64_t m)
{
    int64_t off = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t n = dims[j];
        double x = indices[t * m + j];
        if (!(x >= (double)-n && x < (double)n)) {
            d5_error(D5_ERR_RANGE,
                     "%s: index tuple %lld has %.0f at position %lld, outside [%lld, %lld]", op,
                     (long long)t, x, (long long)j, (long long)-n, (long long)n - 1);
            return -1;
        }
        int64_t v = (int64_t)x;
        off = off * n + (v < 0 ? v + n : v);
    }
    return off;
}
