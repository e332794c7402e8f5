/* Momentum, Adagrad and Adam (ONNX domain ai.onnx.preview.training, opset
 * 1): one optimizer step on n tensors at once. The inputs are the learning
 * rate R and the update count T (scalars: R floating point, T int64), then
 * the n tensors X_1..X_n, their gradients G_1..G_n and the optimizer's state
 * (Momentum: V_1..V_n; Adagrad: H_1..H_n; Adam: V_1..V_n, H_1..H_n), every
 * group in the same order and X_i, G_i and its states of one shape and
 * floating-point type. The outputs are the new X_1..X_n, then the new states
 * in the inputs' order. With G' = norm_coefficient * X + G:
 *   Momentum: V' = alpha V + b G' (b = beta, or 1 when T = 0);
 *             X' = X - R V' ("standard") or X - R (G' + alpha V') ("nesterov")
 *   Adagrad:  H' = H + G'^2;  X' = X - R / (1 + T decay_factor) G' / (sqrt(H') + epsilon)
 *   Adam:     V' = alpha V + (1 - alpha) G';  H' = beta H + (1 - beta) G'^2;
 *             R' = R sqrt(1 - beta^T) / (1 - alpha^T) (R when T = 0);
 *             X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + epsilon))
 * Attribute defaults as the spec gives them (Momentum's are all required).
 * These are updates, not functions to differentiate: no gradient.
 * https://onnx.ai/onnx/operators/onnx_aionnxpreviewtraining_Momentum.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef enum { MOMENTUM, ADAGRAD, ADAM } rule;

typedef struct optimizer {
    const char *name;
    rule rule;
    int32_t groups; /* input tensors per optimized tensor: X, G and the states */
} optimizer;

typedef struct optimizer_state {
    const optimizer *opt;
    int32_t n;      /* tensors optimized */
    int nesterov;   /* Momentum */
    double attr[5]; /* the attributes, in the order of `attr_names` */
} optimizer_state;

static const char *const attr_names[3][5] = {
    {"alpha", "beta", "norm_coefficient", NULL, NULL},
    {"decay_factor", "epsilon", "norm_coefficient", NULL, NULL},
    {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"},
};
static const double attr_defaults[3][5] = {
    {0, 0, 0, 0, 0}, {0, 1e-6, 0, 0, 0}, {0.9, 0.999, 1e-6, 0, 0}};

static const optimizer momentum = {"Momentum", MOMENTUM, 3};
static const optimizer adagrad = {"Adagrad", ADAGRAD, 3};
static const optimizer adam = {"Adam", ADAM, 4};

static d5_status optimizer_create(const optimizer *o, const d5_tensor *in, int32_t nin,
                                  const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout,
                                  void **state)
{
    int32_t n = (nin - 2) / o->groups;
    if (nin < 2 + o->groups || (nin - 2) % o->groups != 0)
        return d5_error(D5_ERR_INVALID,
                        "%s: %d inputs, expected R, T and %d groups of n tensors (2 + %d n)",
                        o->name, (int)nin, (int)o->groups, (int)o->groups);
    if (nout != (o->groups - 1) * n)
        return d5_error(D5_ERR_INVALID, "%s: %d outputs for %d tensors, expected %d", o->name,
                        (int)nout, (int)n, (int)((o->groups - 1) * n));
    d5_status s = d5__need_float(o->name, in, nin, 0);
    if (s == D5_OK) s = d5__need_types(o->name, in, nin, 1, D5__DT(D5_I64));
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < 2; i++)
        if (d5_tensor_desc_numel(&in[i].desc) != 1)
            return d5_error(D5_ERR_SHAPE, "%s: input %d (%s) has %lld values, expected a scalar",
                            o->name, (int)i, i ? "T" : "R",
                            (long long)d5_tensor_desc_numel(&in[i].desc));
    for (int32_t g = 0; g < o->groups; g++)
        for (int32_t k = 0; k < n; k++) {
            int32_t i = 2 + g * n + k, x = 2 + k;
            if ((s = d5__need_float(o->name, in, nin, i)) != D5_OK) return s;
            const d5_tensor_desc *a = &in[i].desc, *b = &in[x].desc;
            if (a->dtype != b->dtype || !d5__same_shape(a, b)) {
                char as[96], bs[96];
                d5__shape_str(a, as, sizeof as);
                d5__shape_str(b, bs, sizeof bs);
                return d5_error(D5_ERR_SHAPE,
                                "%s: input %d is %s %s, but the tensor it belongs to (input %d) "
                                "%s %s",
                                o->name, (int)i, d5_dtype_name((d5_dtype)a->dtype), as, (int)x,
                                d5_dtype_name((d5_dtype)b->dtype), bs);
            }
        }
    optimizer_state st = {o, n, 0, {0}};
    for (int k = 0; k < 5 && attr_names[o->rule][k] && s == D5_OK; k++) {
        const char *a = attr_names[o->rule][k];
        if (o->rule == MOMENTUM && !d5_attrs_find(attrs, a))
            return d5_error(D5_ERR_INVALID, "%s: attribute %s is required", o->name, a);
        s = d5_attrs_float(attrs, a, attr_defaults[o->rule][k], &st.attr[k]);
    }
    if (s == D5_OK && o->rule == MOMENTUM) {
        const char *mode;
        if (!d5_attrs_find(attrs, "mode"))
            return d5_error(D5_ERR_INVALID, "Momentum: attribute mode is required");
        s = d5_attrs_string(attrs, "mode", "", &mode);
        if (s == D5_OK && strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
            return d5_error(D5_ERR_INVALID, "Momentum: mode is '%s', expected standard or nesterov",
                            mode);
        if (s == D5_OK) st.nesterov = strcmp(mode, "nesterov") == 0;
    }
    if (s != D5_OK) return s;
    optimizer_state *p = d5_alloc(sizeof *p, o->name);
    if (!p) return D5_ERR_NOMEM;
    *p = st;
    *state = p;
    for (int32_t k = 0; k < nout; k++)
        out[k] = in[2 + (k / n == 0 ? 0 : k / n + 1) * n + k % n].desc;
    return D5_OK;
}

static d5_status optimizer_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const optimizer_state *st = state;
    const double *a = st->attr;
    double r = in[0].data[0], t = in[1].data[0];
    int32_t n = st->n;
    for (int32_t k = 0; k < n; k++) {
        const d5_rt *x = &in[2 + k], *g = &in[2 + n + k], *s1 = &in[2 + 2 * n + k];
        double *xn = out[k].data, *s1n = out[n + k].data;
        for (int64_t e = 0; e < x->numel; e++) {
            double xv = x->data[e];
            switch (st->opt->rule) {
            case MOMENTUM: {
                double gr = a[2] * xv + g->data[e];
                double v = a[0] * s1->data[e] + (t > 0 ? a[1] : 1) * gr;
                xn[e] = xv - r * (st->nesterov ? gr + a[0] * v : v);
                s1n[e] = v;
                break;
            }
            case ADAGRAD: {
                double gr = a[2] * xv + g->data[e];
                double h = s1->data[e] + gr * gr;
                xn[e] = xv - r / (1 + t * a[0]) * gr / (sqrt(h) + a[1]);
                s1n[e] = h;
                break;
            }
            case ADAM: {
                const d5_rt *s2 = &in[2 + 3 * n + k];
                double gr = a[3] * xv + g->data[e];
                double v = a[0] * s1->data[e] + (1 - a[0]) * gr;
                double h = a[1] * s2->data[e] + (1 - a[1]) * gr * gr;
                double ra = t > 0 ? r * sqrt(1 - pow(a[1], t)) / (1 - pow(a[0], t)) : r;
                xn[e] = (1 - a[4]) * (xv - ra * v / (sqrt(h) + a[2]));
                s1n[e] = v;
                out[2 * n + k].data[e] = h;
                break;
            }
            }
        }
    }
    return D5_OK;
}

/* The create functions of the three: optimizer_create with their optimizer
 * (D5_REF_CREATE_WITH does not pass nout, which these check). */
#define OPTIMIZER_CREATE(NAME, IMPL)                                                               \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return optimizer_create(&IMPL, args->inputs, args->ninputs, args->attrs, args->outputs,    \
                                args->noutputs, state);                                            \
    }
OPTIMIZER_CREATE(Momentum, momentum)
OPTIMIZER_CREATE(Adagrad, adagrad)
OPTIMIZER_CREATE(Adam, adam)

D5_REF_OPERATOR_NO_BACKWARD(Momentum, 5, INT32_MAX, 2, INT32_MAX, Momentum_create,
                            optimizer_forward, NULL, NULL);
D5_REF_OPERATOR_NO_BACKWARD(Adagrad, 5, INT32_MAX, 2, INT32_MAX, Adagrad_create, optimizer_forward,
                            NULL, NULL);
D5_REF_OPERATOR_NO_BACKWARD(Adam, 6, INT32_MAX, 3, INT32_MAX, Adam_create, optimizer_forward, NULL,
                            NULL);
