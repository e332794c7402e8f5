/* HannWindow, HammingWindow and BlackmanWindow (ONNX opset 17): a 1-d window
 * of `size` values (input 0, an int32 or int64 scalar known at create, as it
 * decides the output shape; >= 0). With N = size when periodic = 1 (the
 * default) and size - 1 when periodic = 0 (symmetric),
 *   Hann:     w[n] = 0.5 - 0.5 cos(2 pi n / N)
 *   Hamming:  w[n] = 25/46 - 21/46 cos(2 pi n / N)
 *   Blackman: w[n] = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
 * A symmetric window of one value (N = 0) is [1], as numpy's windows are.
 * output_datatype (a TensorProto data type number, default 1: float32) gives
 * the output's data type. No gradient.
 * https://onnx.ai/onnx/operators/onnx__HannWindow.html */
#include "extra.h"

#include <math.h>

typedef struct window {
    const char *name;
    double a0, a1, a2; /* w = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) */
} window;

typedef struct window_state {
    const window *w;
    int64_t size, n; /* values, and N */
} window_state;

static const window hann = {"HannWindow", 0.5, 0.5, 0};
static const window hamming = {"HammingWindow", 25.0 / 46.0, 21.0 / 46.0, 0};
static const window blackman = {"BlackmanWindow", 0.42, 0.5, 0.08};

static d5_status window_create(const window *w, const d5_tensor *in, int32_t nin,
                               const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    int64_t size = 0, n = 0, periodic, onnx_type;
    int32_t dtype = D5_F32;
    if (d5__has_input(in, nin, 0) && in[0].desc.ndim != 0 && d5_tensor_desc_numel(&in[0].desc) != 1)
        return d5_error(D5_ERR_SHAPE, "%s: input 0 (size) has %lld values, expected a scalar",
                        w->name, (long long)d5_tensor_desc_numel(&in[0].desc));
    d5_status s = d5__const_ints(w->name, in, nin, 0, "size", &size, 1, &n);
    if (s == D5_OK) s = d5_attrs_int(attrs, "periodic", 1, &periodic);
    if (s == D5_OK) s = d5_attrs_int(attrs, "output_datatype", 1, &onnx_type);
    if (s == D5_OK) s = d5__attr_dtype(w->name, "output_datatype", onnx_type, &dtype);
    if (s != D5_OK) return s;
    if (size < 0)
        return d5_error(D5_ERR_INVALID, "%s: input 0 (size) is %lld, expected >= 0", w->name,
                        (long long)size);
    window_state *st = d5_alloc(sizeof *st, w->name);
    if (!st) return D5_ERR_NOMEM;
    *st = (window_state){w, size, periodic ? size : size - 1};
    *state = st;
    out[0].dtype = dtype;
    out[0].ndim = 1;
    out[0].shape[0] = size;
    return D5_OK;
}

static d5_status window_forward(void *state, const d5_ref_call *call)
{
    d5_rt *out = call->outputs;
    const window_state *st = state;
    const window *w = st->w;
    const double pi = 3.14159265358979323846;
    for (int64_t k = 0; k < st->size; k++) {
        if (st->n == 0) {
            out[0].data[k] = 1;
            continue;
        }
        double t = 2 * pi * (double)k / (double)st->n;
        out[0].data[k] = w->a0 - w->a1 * cos(t) + w->a2 * cos(2 * t);
    }
    return D5_OK;
}

D5_REF_CREATE_WITH(HannWindow, window_create, hann)
D5_REF_CREATE_WITH(HammingWindow, window_create, hamming)
D5_REF_CREATE_WITH(BlackmanWindow, window_create, blackman)

D5_REF_OPERATOR_NO_BACKWARD(HannWindow, 1, 1, 1, 1, HannWindow_create, window_forward, NULL, NULL);
D5_REF_OPERATOR_NO_BACKWARD(HammingWindow, 1, 1, 1, 1, HammingWindow_create, window_forward, NULL,
                            NULL);
D5_REF_OPERATOR_NO_BACKWARD(BlackmanWindow, 1, 1, 1, 1, BlackmanWindow_create, window_forward, NULL,
                            NULL);
