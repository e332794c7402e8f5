/* Max and Min (ONNX opset 13): the element-wise maximum (minimum) of 1..N
 * inputs of one numeric data type, broadcast together with numpy's rules. A
 * NaN in any input gives NaN, as numpy.maximum does. The gradient goes to the
 * input that supplied each output element (the first one on a tie), summed
 * over the axes that input was broadcast along; the others get none.
 * https://onnx.ai/onnx/operators/onnx__Max.html
 * https://onnx.ai/onnx/operators/onnx__Min.html */
#include "util.h"

#include <math.h>

static d5_status extreme_create(const char *op, const d5_tensor *in, int32_t nin,
                                d5_tensor_desc *out)
{
    out[0] = in[0].desc;
    for (int32_t k = 0; k < nin; k++) {
        if (!d5__has_input(in, nin, k))
            return d5_error(D5_ERR_INVALID, "%s: input %d is required", op, (int)k);
        if (in[k].desc.dtype == D5_BOOL)
            return d5_error(D5_ERR_INVALID, "%s: input %d is bool, expected a numeric data type",
                            op, (int)k);
        if (in[k].desc.dtype != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "%s: input %d has data type %s, input 0 %s", op, (int)k,
                            d5_dtype_name((d5_dtype)in[k].desc.dtype),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
        d5_tensor_desc so_far = out[0];
        const d5_tensor_desc *both[2] = {&so_far, &in[k].desc};
        d5_status s = d5__broadcast(op, both, 2, &out[0]);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* The input that supplies output element i: the first holding the largest
 * (sign 1) or smallest (sign -1) value, or the first NaN. */
static int32_t selected(const d5_rt *in, int32_t nin, const d5_rt *out, int64_t i, double sign)
{
    int32_t best = 0;
    double v = in[0].data[d5__broadcast_index(out->desc, in[0].desc, i)];
    for (int32_t k = 1; k < nin && !isnan(v); k++) {
        double w = in[k].data[d5__broadcast_index(out->desc, in[k].desc, i)];
        if (isnan(w) || sign * w > sign * v) {
            best = k;
            v = w;
        }
    }
    return best;
}

static d5_status extreme_forward(const d5_rt *in, int32_t nin, d5_rt *out, double sign)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        const d5_rt *src = &in[selected(in, nin, &out[0], i, sign)];
        out[0].data[i] = src->data[d5__broadcast_index(out[0].desc, src->desc, i)];
    }
    return D5_OK;
}

static d5_status extreme_backward(const d5_rt *gout, const d5_rt *in, int32_t nin, const d5_rt *out,
                                  d5_rt *gin, double sign)
{
    for (int64_t i = 0; i < out[0].numel; i++) {
        int32_t k = selected(in, nin, &out[0], i, sign);
        if (gin[k].data)
            gin[k].data[d5__broadcast_index(out[0].desc, in[k].desc, i)] += gout[0].data[i];
    }
    return D5_OK;
}

static double extreme_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                            const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nout;
    return (double)(nin - 1) * (double)d5_tensor_desc_numel(&out[0]);
}

/* The operator table of Max (SIGN 1) or Min (SIGN -1). */
#define EXTREME_OPERATOR(NAME, SIGN)                                                               \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)attrs;                                                                               \
        (void)nout;                                                                                \
        (void)state;                                                                               \
        return extreme_create(#NAME, in, nin, out);                                                \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,         \
                                    int32_t nout)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nout;                                                                                \
        return extreme_forward(in, nin, out, SIGN);                                                \
    }                                                                                              \
    static d5_status NAME##_backward(void *state, const d5_rt *gout, int32_t nout,                 \
                                     const d5_rt *in, int32_t nin, const d5_rt *out, d5_rt *gin)   \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nout;                                                                                \
        return extreme_backward(gout, in, nin, out, gin, SIGN);                                    \
    }                                                                                              \
    D5_REF_OPERATOR(NAME, 1, INT32_MAX, 1, 1, NAME##_create, NAME##_forward, NAME##_backward,      \
                    NULL, extreme_flops)

EXTREME_OPERATOR(Max, 1);
EXTREME_OPERATOR(Min, -1);
