/* MelWeightMatrix (ONNX opset 17): the matrix [dft_length / 2 + 1,
 * num_mel_bins] that maps the bins of a onesided spectrum to mel bands of
 * triangular filters. Inputs num_mel_bins, dft_length, sample_rate (int32 or
 * int64 scalars; the first two known at create, as they give the shape) and
 * lower_edge_hertz, upper_edge_hertz (floating-point scalars). The output's
 * type is output_datatype (a TensorProto number, default 1: float32).
 *
 * As ONNX's reference computes it: num_mel_bins + 2 points evenly spaced in mel
 * (2595 log10(1 + hz / 700)) from lower_edge_hertz, in steps of (mel(upper) -
 * mel(lower)) / (num_mel_bins + 2), are turned back into hertz and into bins
 * floor((dft_length + 1) hz / sample_rate); band i rises linearly from point i
 * to point i + 1 (1 at i + 1; a band whose rise is empty is 1 at its centre)
 * and falls to point i + 2. A point past the last spectrum bin is D5_ERR_RANGE
 * at run time. No gradient.
 * https://onnx.ai/onnx/operators/onnx__MelWeightMatrix.html */
#include "extra.h"

#include <math.h>
#include <string.h>

typedef struct mel {
    int64_t bands, dft_length, bins;
} mel;

static d5_status read_count(const d5_tensor *in, int32_t nin, int32_t i, const char *what,
                            int64_t *v)
{
    int64_t n;
    d5_status s = d5__const_ints("MelWeightMatrix", in, nin, i, what, v, 1, &n);
    if (s != D5_OK) return s;
    if (n != 1 || *v < 1)
        return d5_error(D5_ERR_INVALID, "MelWeightMatrix: input %d (%s) must be one value >= 1",
                        (int)i, what);
    return D5_OK;
}

static d5_status mel_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    mel m;
    int64_t onnx_type;
    int32_t dtype;
    d5_status s = d5__need_types("MelWeightMatrix", in, nin, 2, D5__DT(D5_I32) | D5__DT(D5_I64));
    if (s == D5_OK) s = d5__need_float("MelWeightMatrix", in, nin, 3);
    if (s == D5_OK) s = d5__need_float("MelWeightMatrix", in, nin, 4);
    if (s == D5_OK) s = read_count(in, nin, 0, "num_mel_bins", &m.bands);
    if (s == D5_OK) s = read_count(in, nin, 1, "dft_length", &m.dft_length);
    if (s == D5_OK) s = d5_attrs_int(attrs, "output_datatype", 1, &onnx_type);
    if (s == D5_OK) s = d5__attr_dtype("MelWeightMatrix", "output_datatype", onnx_type, &dtype);
    if (s != D5_OK) return s;
    m.bins = m.dft_length / 2 + 1;
    out[0].dtype = dtype;
    out[0].ndim = 2;
    out[0].shape[0] = m.bins;
    out[0].shape[1] = m.bands;
    return d5__ref_state(state, &m, sizeof m, "MelWeightMatrix");
}

static double to_mel(double hz)
{
    return 2595 * log10(1 + hz / 700);
}

static d5_status mel_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const mel *m = state;
    double rate = in[2].data[0], lo = to_mel(in[3].data[0]), hi = to_mel(in[4].data[0]);
    if (!(rate > 0))
        return d5_error(D5_ERR_INVALID, "MelWeightMatrix: input 2 (sample_rate) is %g, must be > 0",
                        rate);
    double step = (hi - lo) / (double)(m->bands + 2);
    int64_t *point = d5_alloc((size_t)(m->bands + 2) * sizeof *point, "MelWeightMatrix");
    if (!point) return D5_ERR_NOMEM;
    for (int64_t i = 0; i < m->bands + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lo) / 2595) - 1);
        double bin = floor((double)(m->dft_length + 1) * hz / rate);
        point[i] = bin >= 0 && bin < (double)m->bins ? (int64_t)bin : -1;
        if (point[i] < 0 || (i && point[i] < point[i - 1])) {
            d5_status s = d5_error(D5_ERR_RANGE,
                                   "MelWeightMatrix: mel point %lld (%g Hz) falls on bin %g, "
                                   "outside the %lld bins of the spectrum or before the one "
                                   "below it",
                                   (long long)i, hz, bin, (long long)m->bins);
            d5_free(point);
            return s;
        }
    }
    double *y = out[0].data;
    memset(y, 0, (size_t)out[0].numel * sizeof *y);
    for (int64_t i = 0; i < m->bands; i++) {
        int64_t left = point[i], centre = point[i + 1], right = point[i + 2];
        if (centre == left)
            y[centre * m->bands + i] = 1;
        else
            for (int64_t j = left; j <= centre; j++)
                y[j * m->bands + i] = (double)(j - left) / (double)(centre - left);
        for (int64_t j = centre; j < right; j++)
            y[j * m->bands + i] = (double)(right - j) / (double)(right - centre);
    }
    d5_free(point);
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(MelWeightMatrix, 5, 5, 1, 1, mel_create, mel_forward, NULL, NULL);
