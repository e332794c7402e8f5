/* STFT (ONNX opset 17): the short-time Fourier transform of signal [batch,
 * length, 1] (real) or [batch, length, 2] (complex), floating point. Frame f
 * holds the frame_length samples from f * frame_step, times window (input 2,
 * [frame_length], optional: all ones); frame_step (input 1) and frame_length
 * (input 3, optional when window is given, and then equal to its length) are
 * int32 or int64 scalars known at create. The output is [batch, frames, bins,
 * 2] of the signal's type, frames = (length - frame_length) / frame_step + 1
 * (rounded down), bins = frame_length / 2 + 1 with onesided=1 (the default;
 * real signals only) and frame_length with 0: the DFT of each frame (ref/dft.c,
 * naive). No gradient. https://onnx.ai/onnx/operators/onnx__STFT.html */
#include "signal.h"

#include <string.h>

typedef struct stft {
    int64_t batch, length, step, frame, frames, bins;
    int complex_in, has_window;
} stft;

/* One int32 or int64 scalar known at create, at least 1. */
static d5_status positive(const d5_tensor *in, int32_t nin, int32_t i, const char *what, int64_t *v)
{
    int64_t count;
    d5_status s = d5__const_ints("STFT", in, nin, i, what, v, 1, &count);
    if (s != D5_OK) return s;
    if (count != 1 || *v < 1)
        return d5_error(D5_ERR_INVALID, "STFT: input %d (%s) must be one value >= 1", (int)i, what);
    return D5_OK;
}

static d5_status read_frame(const d5_tensor *in, int32_t nin, stft *t)
{
    d5_status s = positive(in, nin, 1, "frame_step", &t->step);
    if (s != D5_OK) return s;
    t->has_window = d5__has_input(in, nin, 2);
    if (t->has_window) {
        s = d5__need_float("STFT", in, nin, 2);
        if (s != D5_OK) return s;
        if (in[2].desc.ndim != 1)
            return d5_error(D5_ERR_SHAPE, "STFT: input 2 (window) has %d dims, expected 1",
                            (int)in[2].desc.ndim);
        t->frame = in[2].desc.shape[0];
    }
    if (d5__has_input(in, nin, 3)) {
        int64_t given;
        s = positive(in, nin, 3, "frame_length", &given);
        if (s != D5_OK) return s;
        if (t->has_window && given != t->frame)
            return d5_error(D5_ERR_INVALID,
                            "STFT: input 3 (frame_length) is %lld but the window has %lld values",
                            (long long)given, (long long)t->frame);
        t->frame = given;
    } else if (!t->has_window) {
        return d5_error(D5_ERR_INVALID,
                        "STFT: one of window (input 2) and frame_length (input 3) is required");
    }
    if (t->frame < 1 || t->frame > t->length)
        return d5_error(D5_ERR_SHAPE, "STFT: the frame of %lld samples must fit the signal's %lld",
                        (long long)t->frame, (long long)t->length);
    return D5_OK;
}

static d5_status stft_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    stft t;
    memset(&t, 0, sizeof t);
    int64_t onesided;
    d5_status s = d5__need_float("STFT", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "onesided", 1, &onesided);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 3 || (x->shape[2] != 1 && x->shape[2] != 2))
        return d5_error(D5_ERR_SHAPE,
                        "STFT: input 0 (signal) has %d dims, expected 3: [batch, length, 1 or 2]",
                        (int)x->ndim);
    t.batch = x->shape[0];
    t.length = x->shape[1];
    t.complex_in = x->shape[2] == 2;
    if (onesided && t.complex_in)
        return d5_error(D5_ERR_INVALID,
                        "STFT: onesided=1 needs a real signal, input 0 is complex ([..., 2])");
    s = read_frame(in, nin, &t);
    if (s != D5_OK) return s;
    t.frames = (t.length - t.frame) / t.step + 1;
    t.bins = onesided ? t.frame / 2 + 1 : t.frame;
    out[0] = *x;
    out[0].ndim = 4;
    out[0].shape[1] = t.frames;
    out[0].shape[2] = t.bins;
    out[0].shape[3] = 2;
    return d5__ref_state(state, &t, sizeof t, "STFT");
}

static d5_status stft_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const stft *t = state;
    int64_t c = t->complex_in ? 2 : 1;
    double *frame = d5_alloc((size_t)(2 * t->frame) * sizeof(double), "STFT frame");
    if (!frame) return D5_ERR_NOMEM;
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t f = 0; f < t->frames; f++) {
            const double *x = in[0].data + (b * t->length + f * t->step) * c;
            for (int64_t k = 0; k < t->frame; k++) {
                double w = t->has_window ? in[2].data[k] : 1;
                frame[2 * k] = x[k * c] * w;
                frame[2 * k + 1] = t->complex_in ? x[k * c + 1] * w : 0;
            }
            double *y = out[0].data + (b * t->frames + f) * t->bins * 2;
            d5__dft(frame, frame + 1, 2, t->frame, t->frame, t->bins, 0, y, y + 1, 2);
        }
    d5_free(frame);
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(STFT, 2, 4, 1, 1, stft_create, stft_forward, NULL, NULL);
