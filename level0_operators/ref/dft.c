/* DFT (ONNX opset 17): the discrete Fourier transform of input along axis
 * (attribute, default 1; a negative one means axis + rank), input [batch,
 * signal dims..., 1] (real) or [..., 2] (complex: real, imaginary), floating
 * point. The optional input dft_length (int32 or int64 scalar, known at
 * create) sets the transform's length n: the signal is cut to n or
 * zero-padded up to it (default: the axis's size). inverse=1 computes x[k] =
 * 1/n sum_m X[m] exp(+2 pi i m k / n); onesided=1 keeps the bins
 * 0..floor(n/2) (the others are conjugates for a real signal). The output is
 * [..., n or floor(n/2) + 1 along axis, ..., 2] of the input's type.
 * Evaluated naively in O(n^2) per transform; inverse and onesided together are
 * unsupported. No gradient. https://onnx.ai/onnx/operators/onnx__DFT.html */
#include "signal.h"

#include <math.h>

void d5__dft(const double *re, const double *im, int64_t stride, int64_t given, int64_t n,
             int64_t nout, int inverse, double *out_re, double *out_im, int64_t out_stride)
{
    const double two_pi = 6.283185307179586476925286766559;
    double sign = inverse ? 1 : -1;
    if (given > n) given = n;
    for (int64_t m = 0; m < nout; m++) {
        double sr = 0, si = 0;
        for (int64_t k = 0; k < given; k++) {
            double angle = sign * two_pi * (double)((m * k) % n) / (double)n;
            double c = cos(angle), s = sin(angle);
            double xr = re[k * stride], xi = im ? im[k * stride] : 0;
            sr += xr * c - xi * s;
            si += xr * s + xi * c;
        }
        if (inverse) {
            sr /= (double)n;
            si /= (double)n;
        }
        out_re[m * out_stride] = sr;
        out_im[m * out_stride] = si;
    }
}

typedef struct dft {
    int64_t outer, inner;    /* elements before and after the axis (last dim excluded) */
    int64_t in_len, n, nout; /* axis size in, transform length, bins out */
    int complex_in, inverse;
} dft;

static d5_status read_length(const d5_tensor *in, int32_t nin, int64_t def, int64_t *n)
{
    *n = def;
    if (!d5__has_input(in, nin, 1)) return D5_OK;
    int64_t v, count;
    d5_status s = d5__const_ints("DFT", in, nin, 1, "dft_length", &v, 1, &count);
    if (s != D5_OK) return s;
    if (count != 1 || v < 1)
        return d5_error(D5_ERR_INVALID, "DFT: input 1 (dft_length) must be one value >= 1");
    *n = v;
    return D5_OK;
}

static d5_status dft_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t axis, inverse, onesided, n;
    d5_status s = d5__need_float("DFT", in, nin, 0);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", 1, &axis);
    if (s == D5_OK) s = d5_attrs_int(attrs, "inverse", 0, &inverse);
    if (s == D5_OK) s = d5_attrs_int(attrs, "onesided", 0, &onesided);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t r = x->ndim;
    if (r < 2 || (x->shape[r - 1] != 1 && x->shape[r - 1] != 2))
        return d5_error(D5_ERR_SHAPE,
                        "DFT: input 0 must be [batch, signal dims..., 1 or 2], its last dim is "
                        "%lld",
                        r ? (long long)x->shape[r - 1] : 0LL);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r - 2)
        return d5_error(D5_ERR_INVALID,
                        "DFT: axis is out of range for a %d-d input (the last "
                        "dim holds real and imaginary parts)",
                        (int)r);
    if (inverse && onesided)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "DFT: inverse=1 with onesided=1 is not supported (ref backend)");
    s = read_length(in, nin, x->shape[axis], &n);
    if (s != D5_OK) return s;
    dft *d = d5_alloc(sizeof *d, "DFT");
    if (!d) return D5_ERR_NOMEM;
    d->outer = d->inner = 1;
    for (int32_t i = 0; i < axis; i++) d->outer *= x->shape[i];
    for (int32_t i = (int32_t)axis + 1; i < r - 1; i++) d->inner *= x->shape[i];
    d->in_len = x->shape[axis];
    d->n = n;
    d->nout = onesided ? n / 2 + 1 : n;
    d->complex_in = x->shape[r - 1] == 2;
    d->inverse = (int)inverse;
    out[0] = *x;
    out[0].shape[axis] = d->nout;
    out[0].shape[r - 1] = 2;
    *state = d;
    return D5_OK;
}

static d5_status dft_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const dft *d = state;
    int64_t c = d->complex_in ? 2 : 1;
    for (int64_t o = 0; o < d->outer; o++)
        for (int64_t i = 0; i < d->inner; i++) {
            const double *x = in[0].data + (o * d->in_len * d->inner + i) * c;
            double *y = out[0].data + (o * d->nout * d->inner + i) * 2;
            d5__dft(x, d->complex_in ? x + 1 : NULL, d->inner * c, d->in_len, d->n, d->nout,
                    d->inverse, y, y + 1, d->inner * 2);
        }
    return D5_OK;
}

/* About 8 operations per term: n terms per bin. */
static double dft_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const dft *d = state;
    return 8.0 * (double)(d->outer * d->inner) * (double)d->nout *
           (double)(d->in_len < d->n ? d->in_len : d->n);
}

D5_REF_OPERATOR_NO_BACKWARD(DFT, 1, 2, 1, 1, dft_create, dft_forward, NULL, dft_flops);
