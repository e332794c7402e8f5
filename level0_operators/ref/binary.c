/* Element-wise binary operators and comparisons with numpy broadcasting. */
#include "binary.h"

d5_status d5__binary_create(const char *name, const d5_tensor *in, int32_t nin, d5_tensor_desc *out)
{
    d5_status s = d5__need_float(name, in, nin, 0);
    if (s == D5_OK) s = d5__need_float(name, in, nin, 1);
    if (s != D5_OK) return s;
    if (in[0].desc.dtype != in[1].desc.dtype)
        return d5_error(D5_ERR_INVALID, "%s: inputs have data types %s and %s", name,
                        d5_dtype_name((d5_dtype)in[0].desc.dtype),
                        d5_dtype_name((d5_dtype)in[1].desc.dtype));
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    out[0].dtype = in[0].desc.dtype;
    return d5__broadcast(name, both, 2, &out[0]);
}

d5_status d5__compare_create(const char *name, const d5_tensor *in, int32_t nin, int allow_bool,
                             d5_tensor_desc *out)
{
    for (int32_t i = 0; i < 2; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d is required", name, (int)i);
        if (in[i].desc.dtype == D5_BOOL && !allow_bool)
            return d5_error(D5_ERR_INVALID, "%s: input %d is bool, expected a numeric data type",
                            name, (int)i);
    }
    if (in[0].desc.dtype != in[1].desc.dtype)
        return d5_error(D5_ERR_INVALID, "%s: inputs have data types %s and %s", name,
                        d5_dtype_name((d5_dtype)in[0].desc.dtype),
                        d5_dtype_name((d5_dtype)in[1].desc.dtype));
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    out[0].dtype = D5_BOOL;
    return d5__broadcast(name, both, 2, &out[0]);
}

d5_status d5__binary_forward(const d5_binary_fn *fn, const d5_rt *in, d5_rt *out)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        double a = in[0].data[d5__broadcast_index(out[0].desc, in[0].desc, i)];
        double b = in[1].data[d5__broadcast_index(out[0].desc, in[1].desc, i)];
        out[0].data[i] = fn->f(a, b);
    }
    return D5_OK;
}

d5_status d5__binary_backward(const d5_binary_fn *fn, const d5_rt *gout, const d5_rt *in,
                              const d5_rt *out, d5_rt *gin)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t ia = d5__broadcast_index(out[0].desc, in[0].desc, i);
        int64_t ib = d5__broadcast_index(out[0].desc, in[1].desc, i);
        double a = in[0].data[ia], b = in[1].data[ib], y = out[0].data[i], g = gout[0].data[i];
        if (gin[0].data) gin[0].data[ia] += g * fn->da(a, b, y);
        if (gin[1].data) gin[1].data[ib] += g * fn->db(a, b, y);
    }
    return D5_OK;
}

double d5__binary_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&out[0]);
}
