/* Element-wise binary operators, comparisons and logic with numpy
 * broadcasting. */
#include "binary.h"

/* Checks input i against fn->inputs. */
static d5_status check_input(const d5_binary_fn *fn, const d5_tensor *in, int32_t nin, int32_t i)
{
    if (fn->inputs == D5_BINARY_FLOAT) return d5__need_float(fn->name, in, nin, i);
    if (fn->inputs == D5_BINARY_ARITH) return d5__need_types(fn->name, in, nin, i, D5__NUMBERS);
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d is required", fn->name, (int)i);
    int32_t dtype = in[i].desc.dtype;
    if (fn->inputs == D5_BINARY_NUMERIC && dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "%s: input %d is bool, expected a numeric data type",
                        fn->name, (int)i);
    if (fn->inputs == D5_BINARY_BOOL && dtype != D5_BOOL)
        return d5_error(D5_ERR_INVALID, "%s: input %d has data type %s, expected bool", fn->name,
                        (int)i, d5_dtype_name((d5_dtype)dtype));
    return D5_OK;
}

d5_status d5__binary_create(const d5_binary_fn *fn, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    (void)attrs;
    for (int32_t i = 0; i < 2; i++) {
        d5_status s = check_input(fn, in, nin, i);
        if (s != D5_OK) return s;
    }
    if (in[0].desc.dtype != in[1].desc.dtype)
        return d5_error(D5_ERR_INVALID, "%s: inputs have data types %s and %s", fn->name,
                        d5_dtype_name((d5_dtype)in[0].desc.dtype),
                        d5_dtype_name((d5_dtype)in[1].desc.dtype));
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    int same = fn->inputs == D5_BINARY_FLOAT || fn->inputs == D5_BINARY_ARITH;
    out[0].dtype = same ? in[0].desc.dtype : D5_BOOL;
    *state = (void *)fn; /* read only */
    return d5__broadcast(fn->name, both, 2, &out[0]);
}

void d5__binary_eval(const d5_binary_fn *fn, const d5_rt *in, d5_rt *out)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        double a = in[0].data[d5__broadcast_index(out[0].desc, in[0].desc, i)];
        double b = in[1].data[d5__broadcast_index(out[0].desc, in[1].desc, i)];
        out[0].data[i] = fn->f(a, b);
    }
}

void d5__binary_grad(const d5_binary_fn *fn, const d5_rt *gout, const d5_rt *in, const d5_rt *out,
                     d5_rt *gin)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t ia = d5__broadcast_index(out[0].desc, in[0].desc, i);
        int64_t ib = d5__broadcast_index(out[0].desc, in[1].desc, i);
        double a = in[0].data[ia], b = in[1].data[ib], y = out[0].data[i], g = gout[0].data[i];
        if (gin[0].data) gin[0].data[ia] += g * fn->da(a, b, y);
        if (gin[1].data) gin[1].data[ib] += g * fn->db(a, b, y);
    }
}

d5_status d5__binary_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    d5__binary_eval(state, in, out);
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

d5_status d5__binary_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    d5__binary_grad(state, gout, in, out, gin);
    return D5_OK;
}

double d5__binary_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *out = shapes->outputs;
    (void)state;
    return (double)d5_tensor_desc_numel(&out[0]);
}

double d5__binary_one(double a, double b, double y)
{
    (void)a;
    (void)b;
    (void)y;
    return 1;
}
