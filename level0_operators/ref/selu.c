/* Selu (ONNX opset 6; opset 22 only adds data types): Y = gamma * X for X > 0
 * and gamma * alpha * (e^X - 1) otherwise, element-wise on float32 or float64;
 * attributes alpha (default 1.67326319217681884765625) and gamma (default
 * 1.05070102214813232421875). dY/dX is gamma for X > 0 and
 * gamma * alpha * e^X otherwise.
 * https://onnx.ai/onnx/operators/onnx__Selu.html */
#include "unary.h"

#include <math.h>

typedef struct selu {
    double alpha, gamma;
} selu;

static d5_status selu_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    selu p;
    d5_status s = d5__unary_create("Selu", in, nin, out);
    if (s == D5_OK) s = d5_attrs_float(attrs, "alpha", 1.67326319217681884765625, &p.alpha);
    if (s == D5_OK) s = d5_attrs_float(attrs, "gamma", 1.05070102214813232421875, &p.gamma);
    if (s != D5_OK) return s;
    selu *st = d5_alloc(sizeof *st, "Selu");
    if (!st) return D5_ERR_NOMEM;
    *st = p;
    *state = st;
    return D5_OK;
}

static d5_status selu_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)nin;
    (void)nout;
    const selu *p = state;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = p->gamma * (x > 0 ? x : p->alpha * expm1(x));
    }
    return D5_OK;
}

static d5_status selu_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    (void)out;
    const selu *p = state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++) {
            double x = in[0].data[i];
            gin[0].data[i] += gout[0].data[i] * p->gamma * (x > 0 ? 1 : p->alpha * exp(x));
        }
    return D5_OK;
}

D5_REF_OPERATOR(Selu, 1, 1, 1, 1, selu_create, selu_forward, selu_backward, NULL, d5__unary_flops);
