/* Sign (ONNX opset 13): -1, 0 or 1 by the sign of each element, of any
 * numeric data type (NaN stays NaN). The function is flat away from 0, so its
 * gradient is zero, as in PyTorch.
 * https://onnx.ai/onnx/operators/onnx__Sign.html */
#include "util.h"

#include <math.h>

static d5_status sign_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Sign: input 0 is required");
    if (in[0].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "Sign: input 0 is bool, expected a numeric data type");
    out[0] = in[0].desc;
    return D5_OK;
}

static d5_status sign_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = x > 0 ? 1 : x < 0 ? -1 : x; /* 0 and NaN pass through */
    }
    return D5_OK;
}

/* The input gradient stays as the wrapper zeroed it. */
static d5_status sign_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)gout;
    (void)nout;
    (void)in;
    (void)nin;
    (void)out;
    (void)gin;
    return D5_OK;
}

D5_REF_OPERATOR(Sign, 1, 1, 1, 1, sign_create, sign_forward, sign_backward, NULL, NULL);
