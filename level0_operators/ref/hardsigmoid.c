/* HardSigmoid (ONNX opset 6): Y = max(0, min(1, alpha * X + beta)); attributes
 * alpha (default 0.2) and beta (default 0.5). The gradient is alpha where
 * 0 < alpha * X + beta < 1 and 0 where the output saturates. (Opset 22 only
 * adds data types.)
 * https://onnx.ai/onnx/operators/onnx__HardSigmoid.html */
#include "unary.h"

typedef struct hardsigmoid {
    double alpha, beta;
} hardsigmoid;

/* The shared element-wise machinery passes one parameter: the kernels below
 * apply beta themselves and hand alpha to the derivative. */
static double hardsigmoid_f(double z, double alpha)
{
    (void)alpha;
    return z < 0 ? 0 : z > 1 ? 1 : z;
}
/* dY/dX from the output: alpha strictly inside (0, 1), 0 on the flat parts. */
static double hardsigmoid_df(double x, double y, double alpha)
{
    (void)x;
    return y > 0 && y < 1 ? alpha : 0;
}

static const d5_unary_fn hardsigmoid_fn = {"HardSigmoid", hardsigmoid_f, hardsigmoid_df};

static d5_status hardsigmoid_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                    d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    hardsigmoid h;
    d5_status s = d5__unary_create("HardSigmoid", in, nin, out);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 0.2, &h.alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "beta", 0.5, &h.beta);
    if (s != D5_OK) return s;
    hardsigmoid *st = d5_alloc(sizeof *st, "HardSigmoid");
    if (!st) return D5_ERR_NOMEM;
    *st = h;
    *state = st;
    return D5_OK;
}

static d5_status hardsigmoid_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                     int32_t nout)
{
    (void)nin;
    (void)nout;
    const hardsigmoid *h = state;
    for (int64_t i = 0; i < in[0].numel; i++)
        out[0].data[i] = hardsigmoid_fn.f(h->alpha * in[0].data[i] + h->beta, 0);
    return D5_OK;
}

static d5_status hardsigmoid_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                      int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    const hardsigmoid *h = state;
    return d5__unary_backward(&hardsigmoid_fn, h->alpha, gout, in, out, gin);
}

D5_REF_OPERATOR(HardSigmoid, 1, 1, 1, 1, hardsigmoid_create, hardsigmoid_forward,
                hardsigmoid_backward, NULL, d5__unary_flops);
