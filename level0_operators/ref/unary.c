/* Element-wise unary operators. */
#include "unary.h"

d5_status d5__unary_create(const char *name, const d5_tensor *in, int32_t nin, d5_tensor_desc *out)
{
    d5_status s = d5__need_float(name, in, nin, 0);
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

d5_status d5__unary_op_create(const d5_unary_fn *fn, const d5_tensor *in, int32_t nin,
                              const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    d5_unary_state u = {fn, {fn->def[0], fn->def[1]}};
    d5_status s = d5__need_types(fn->name, in, nin, 0, fn->types ? fn->types : D5__FLOATS);
    if (s == D5_OK) out[0] = in[0].desc;
    for (int k = 0; k < 2 && s == D5_OK; k++)
        if (fn->attr[k]) s = d5_attrs_float(attrs, fn->attr[k], fn->def[k], &u.attr[k]);
    if (s != D5_OK) return s;
    return d5__ref_state(state, &u, sizeof u, fn->name);
}

d5_status d5__unary_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_unary_state *u = state;
    double (*f)(double, double) = u->fn->f;
    double alpha = u->attr[0];
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[i] = f(in[0].data[i], alpha);
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

d5_status d5__unary_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const d5_unary_state *u = state;
    double (*df)(double, double, double) = u->fn->df;
    double alpha = u->attr[0];
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] += gout[0].data[i] * df(in[0].data[i], out[0].data[i], alpha);
    return D5_OK;
}
