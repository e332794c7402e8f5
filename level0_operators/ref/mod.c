/* Mod (ONNX opset 13): the element-wise remainder of A / B, broadcast
 * together with numpy's rules; A and B share one numeric data type. With the
 * attribute fmod = 0 (the default, integers only) the remainder takes the
 * sign of the divisor, as Python's % and numpy.mod; with fmod = 1 it takes the
 * sign of the dividend, as C's fmod and numpy.fmod. Floating-point inputs need
 * fmod = 1. An integer division by zero is an error; a floating-point one
 * gives NaN. Integers are carried as doubles, exact up to 2^53.
 *
 * Gradient (floating point): A - trunc(A / B) * B has dY/dA = 1 and
 * dY/dB = -trunc(A / B), summed over broadcast axes.
 * https://onnx.ai/onnx/operators/onnx__Mod.html */
#include "binary.h"

#include <math.h>

typedef struct mod {
    int fmod, is_float;
} mod;

static double fmod_f(double a, double b)
{
    return fmod(a, b);
}
static double fmod_db(double a, double b, double y)
{
    (void)y;
    return -trunc(a / b);
}
/* The remainder with the divisor's sign. */
static double pymod_f(double a, double b)
{
    double r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

static const d5_binary_fn fmod_fn = {"Mod", fmod_f, d5__binary_one, fmod_db, D5_BINARY_FLOAT};
static const d5_binary_fn pymod_fn = {"Mod", pymod_f, NULL, NULL, D5_BINARY_FLOAT};

static d5_status mod_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    for (int32_t i = 0; i < 2; i++) {
        d5_status s = d5__need_input("Mod", in, nin, i, i ? "B" : "A");
        if (s != D5_OK) return s;
        if (in[i].desc.dtype == D5_BOOL)
            return d5_error(D5_ERR_INVALID, "Mod: input %d is bool, expected a numeric data type",
                            (int)i);
    }
    if (in[0].desc.dtype != in[1].desc.dtype)
        return d5_error(D5_ERR_INVALID, "Mod: A has data type %s but B has %s",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype),
                        d5_dtype_name((d5_dtype)in[1].desc.dtype));
    int64_t f;
    d5_status s = d5_attrs_int(attrs, "fmod", 0, &f);
    if (s != D5_OK) return s;
    if (f != 0 && f != 1)
        return d5_error(D5_ERR_INVALID, "Mod: attribute fmod is %lld, expected 0 or 1",
                        (long long)f);
    int is_float = d5__in_types(in[0].desc.dtype, D5__FLOATS);
    if (is_float && f == 0)
        return d5_error(D5_ERR_INVALID,
                        "Mod: inputs are %s, which need fmod = 1 (fmod = 0 is for integers)",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    out[0].dtype = in[0].desc.dtype;
    s = d5__broadcast("Mod", both, 2, &out[0]);
    if (s != D5_OK) return s;
    mod *m = d5_alloc(sizeof *m, "Mod");
    if (!m) return D5_ERR_NOMEM;
    *m = (mod){(int)f, is_float};
    *state = m;
    return D5_OK;
}

static d5_status mod_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const mod *m = state;
    if (!m->is_float)
        for (int64_t j = 0; j < in[1].numel; j++)
            if (in[1].data[j] == 0)
                return d5_error(D5_ERR_NUMERIC,
                                "Mod: integer division by zero (element %lld of B is 0)",
                                (long long)j);
    d5__binary_eval(m->fmod ? &fmod_fn : &pymod_fn, in, out);
    return D5_OK;
}

/* Only floating-point inputs have a gradient, and they always use fmod = 1;
 * integer ones leave it zero. */
static d5_status mod_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const mod *m = state;
    if (m->is_float) d5__binary_grad(&fmod_fn, gout, in, out, gin);
    return D5_OK;
}

D5_REF_OPERATOR(Mod, 2, 2, 1, 1, mod_create, mod_forward, mod_backward, NULL, d5__binary_flops);
