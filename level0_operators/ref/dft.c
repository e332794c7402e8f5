/* DFT (ONNX opsets 17 and 20): the discrete Fourier transform of input
 * along an axis, input [batch, signal dims..., 1] (real) or [..., 2]
 * (complex: real, imaginary), floating point. The axis is an attribute in
 * opset 17 (default 1) and an optional int64 scalar input known at create
 * from opset 20 on (default -2); a negative one means axis + rank. The
 * optional input dft_length (int32 or int64 scalar, known at create) sets the
 * transform's length n: the signal is cut to n or zero-padded up to it
 * (default: the axis's size). inverse=1 computes x[k] = 1/n sum_m X[m]
 * exp(+2 pi i m k / n); onesided=1 keeps the bins 0..floor(n/2) (the others
 * are conjugates for a real signal). The output is [..., n or floor(n/2) + 1
 * along axis, ..., 2] of the input's type. inverse and onesided together are
 * the inverse of the one-sided transform (IRFFT, numpy's irfft): the complex
 * input holds bins 0..floor(n/2) (cut or zero-padded to them; default n =
 * 2 * (bins - 1)), their conjugates stand for the others, the imaginary parts
 * of bin 0 and (n even) bin n/2 are dropped, and the output is real, [..., n
 * along axis, ..., 1]. Evaluated naively in O(n^2) per transform. No
 * gradient. https://onnx.ai/onnx/operators/onnx__DFT.html */
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
    int complex_in, inverse, irfft;
} dft;

/* IRFFT of one signal: bins re/im[0..given-1] (the bins past floor(n/2)
 * ignored, the missing ones zero) into n real values. */
static void irfft(const double *re, const double *im, int64_t stride, int64_t given, int64_t n,
                  double *out, int64_t out_stride)
{
    const double two_pi = 6.283185307179586476925286766559;
    int64_t half = n / 2, bins = given < half + 1 ? given : half + 1;
    for (int64_t m = 0; m < n; m++) {
        double sum = bins > 0 ? re[0] : 0;
        for (int64_t k = 1; k < bins; k++) {
            double xr = re[k * stride], xi = im[k * stride];
            if (n % 2 == 0 && k == half) { /* the Nyquist bin, its own conjugate */
                sum += xr * ((m % 2) ? -1 : 1);
                continue;
            }
            double angle = two_pi * (double)((m * k) % n) / (double)n;
            sum += 2 * (xr * cos(angle) - xi * sin(angle));
        }
        out[m * out_stride] = sum / (double)n;
    }
}

/* The axis: attribute `axis` (default 1) before opset 20, input 2 (default
 * -2) from 20 on. */
static d5_status read_axis(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, int64_t opset,
                           int64_t *axis)
{
    if (opset < 20) return d5_attrs_int(attrs, "axis", 1, axis);
    if (d5_attrs_find(attrs, "axis"))
        return d5_error(
            D5_ERR_INVALID,
            "DFT: attribute axis belongs to opset 17; from opset 20 the axis is input 2");
    *axis = -2;
    if (!d5__has_input(in, nin, 2)) return D5_OK;
    int64_t count;
    d5_status s = d5__const_ints("DFT", in, nin, 2, "axis", axis, 1, &count);
    if (s == D5_OK && count != 1)
        s = d5_error(D5_ERR_INVALID, "DFT: input 2 (axis) must be one value, got %lld",
                     (long long)count);
    return s;
}

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
    int64_t axis, inverse, onesided, n, opset;
    d5_status s = d5__need_float("DFT", in, nin, 0);
    if (s == D5_OK) s = d5__ref_opset("DFT", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = read_axis(in, nin, attrs, opset, &axis);
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
    int is_irfft = inverse && onesided;
    if (is_irfft && x->shape[r - 1] != 2)
        return d5_error(D5_ERR_SHAPE,
                        "DFT: inverse=1 with onesided=1 (IRFFT) takes a complex input [..., 2]");
    s = read_length(in, nin, is_irfft ? 2 * (x->shape[axis] - 1) : x->shape[axis], &n);
    if (s == D5_OK && n < 1)
        s = d5_error(D5_ERR_INVALID, "DFT: the IRFFT of %lld bins has no default length",
                     (long long)x->shape[axis]);
    if (s != D5_OK) return s;
    dft *d = d5_alloc(sizeof *d, "DFT");
    if (!d) return D5_ERR_NOMEM;
    d->outer = d->inner = 1;
    for (int32_t i = 0; i < axis; i++) d->outer *= x->shape[i];
    for (int32_t i = (int32_t)axis + 1; i < r - 1; i++) d->inner *= x->shape[i];
    d->in_len = x->shape[axis];
    d->n = n;
    d->nout = onesided && !is_irfft ? n / 2 + 1 : n;
    d->complex_in = x->shape[r - 1] == 2;
    d->inverse = (int)inverse;
    d->irfft = is_irfft;
    out[0] = *x;
    out[0].shape[axis] = d->nout;
    out[0].shape[r - 1] = is_irfft ? 1 : 2;
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
            if (d->irfft) {
                irfft(x, x + 1, d->inner * 2, d->in_len, d->n,
                      out[0].data + o * d->nout * d->inner + i, d->inner);
                continue;
            }
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

D5_REF_OPERATOR_NO_BACKWARD(DFT, 1, 3, 1, 1, dft_create, dft_forward, NULL, dft_flops);
