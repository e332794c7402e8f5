/* Element-wise unary operators. */
#include "unary.h"

d5_status d5__unary_create(const char *name, const d5_tensor *in, int32_t nin, d5_tensor_desc *out)
{
    d5_status s = d5__need_float(name, in, nin, 0);
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

d5_status d5__unary_alpha(const d5_attrs *attrs, double def, void **state)
{
    double alpha;
    d5_status s = d5_attrs_float(attrs, "alpha", def, &alpha);
    if (s != D5_OK) return s;
    double *st = d5_alloc(sizeof *st, "alpha");
    if (!st) return D5_ERR_NOMEM;
    *st = alpha;
    *state = st;
    return D5_OK;
}

d5_status d5__unary_forward(const d5_unary_fn *fn, double alpha, const d5_rt *in, d5_rt *out)
{
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[i] = fn->f(in[0].data[i], alpha);
    return D5_OK;
}

d5_status d5__unary_backward(const d5_unary_fn *fn, double alpha, const d5_rt *gout,
                             const d5_rt *in, const d5_rt *out, d5_rt *gin)
{
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] += gout[0].data[i] * fn->df(in[0].data[i], out[0].data[i], alpha);
    return D5_OK;
}

double d5__unary_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                       const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)out;
    (void)nout;
    return (double)d5_tensor_desc_numel(&in[0]);
}
