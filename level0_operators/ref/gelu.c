/* Gelu (ONNX opset 20): the Gaussian error linear unit. Attribute approximate:
 *   "none" (default): Y = 0.5 X (1 + erf(X / sqrt(2))),
 *   "tanh":           Y = 0.5 X (1 + tanh(sqrt(2 / pi) (X + 0.044715 X^3))).
 * The gradients are, with Phi and phi the standard normal distribution and
 * density, Phi(X) + X phi(X) for "none", and for "tanh", with
 * t = tanh(sqrt(2 / pi) (X + 0.044715 X^3)),
 *   0.5 (1 + t) + 0.5 X (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 X^2).
 * https://onnx.ai/onnx/operators/onnx__Gelu.html */
#include "unary.h"

#include <math.h>
#include <string.h>

#define SQRT_HALF       0.70710678118654752440 /* 1 / sqrt(2) */
#define SQRT_TWO_BY_PI  0.79788456080286535588 /* sqrt(2 / pi) */
#define INV_SQRT_TWO_PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define GELU_CUBIC      0.044715

/* `alpha` carries the approximation: 0 for "none", 1 for "tanh". */
static double gelu_f(double x, double tanh_approx)
{
    if (tanh_approx != 0)
        return 0.5 * x * (1 + tanh(SQRT_TWO_BY_PI * (x + GELU_CUBIC * x * x * x)));
    return 0.5 * x * (1 + erf(x * SQRT_HALF));
}
static double gelu_df(double x, double y, double tanh_approx)
{
    (void)y;
    if (tanh_approx != 0) {
        double t = tanh(SQRT_TWO_BY_PI * (x + GELU_CUBIC * x * x * x));
        return 0.5 * (1 + t) +
               0.5 * x * (1 - t * t) * SQRT_TWO_BY_PI * (1 + 3 * GELU_CUBIC * x * x);
    }
    return 0.5 * (1 + erf(x * SQRT_HALF)) + x * INV_SQRT_TWO_PI * exp(-0.5 * x * x);
}

static const d5_unary_fn gelu_fn = {.name = "Gelu", .f = gelu_f, .df = gelu_df};

static d5_status gelu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *approximate;
    d5_status s = d5__unary_create("Gelu", in, nin, out);
    if (s == D5_OK) s = d5_attrs_string(attrs, "approximate", "none", &approximate);
    if (s != D5_OK) return s;
    if (strcmp(approximate, "none") != 0 && strcmp(approximate, "tanh") != 0)
        return d5_error(D5_ERR_INVALID,
                        "Gelu: attribute approximate is '%s', expected 'none' or 'tanh'",
                        approximate);
    d5_unary_state *st = d5_alloc(sizeof *st, "Gelu");
    if (!st) return D5_ERR_NOMEM;
    *st = (d5_unary_state){&gelu_fn, {strcmp(approximate, "tanh") == 0 ? 1 : 0, 0}};
    *state = st;
    return D5_OK;
}

D5_REF_OPERATOR(Gelu, 1, 1, 1, 1, gelu_create, d5__unary_forward, d5__unary_backward, NULL,
                d5__flops_per_input);
