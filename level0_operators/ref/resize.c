/* Resize (ONNX opsets 11 to 19, read with opset 13's optional inputs): inputs
 * X, roi (optional), scales (optional) and sizes (optional); exactly one of
 * scales and sizes gives the output shape and must be known at create. Along
 * each axis d, from scales: out = floor(in * scale); from sizes: out = size and
 * scale = out / in. The attribute axes (opset 18) lists the axes that scales or
 * sizes cover; the others keep their size.
 *
 * Output coordinate x reads the input coordinate x_original given by
 * coordinate_transformation_mode, with length = in * scale (= out for sizes):
 *   half_pixel (default):  (x + 0.5) / scale - 0.5
 *   pytorch_half_pixel:    length > 1 ? (x + 0.5) / scale - 0.5 : 0
 *   align_corners:         length == 1 ? 0 : x * (in - 1) / (length - 1)
 *   asymmetric:            x / scale
 *   tf_half_pixel_for_nn:  (x + 0.5) / scale
 *   tf_crop_and_resize:    length > 1 ? start * (in - 1) + x * (end - start) *
 *                          (in - 1) / (length - 1) : (start + end) * (in - 1) / 2
 * where start and end are the axis's entries of roi (input 1, known at create:
 * [starts..., ends...], one pair per axis or per entry of axes; default 0 and
 * 1). With tf_crop_and_resize, an output element any of whose coordinates maps
 * outside [0, in - 1] is extrapolation_value (default 0); from opset 18, an
 * output size taken from scales is floor(in * (end - start) * scale).
 * mode "nearest" (default) takes the input element at x_original rounded by
 * nearest_mode: round_prefer_floor (default; halves go down),
 * round_prefer_ceil (halves go up), floor or ceil. mode "linear" blends the
 * two input elements around x_original, axis by axis (N-d multilinear). mode
 * "cubic" blends the four input elements i - 1, i, i + 1, i + 2 around it,
 * where i = ceil(x_original) - 1 and t = x_original - i in (0, 1], with Keys'
 * weights for a = cubic_coeff_a (default -0.75): W(t + 1), W(t), W(1 - t),
 * W(2 - t), W(s) = ((a s - 5a) s + 8a) s - 4a for 1 < s < 2 and
 * ((a + 2) s - (a + 3)) s^2 + 1 for s <= 1; exclude_outside=1 zeroes the
 * weights of positions outside the input and rescales the others to sum 1.
 * Input positions outside [0, in - 1] are clamped to the edge, as the ONNX
 * reference implementation does. X may be of any data type: nearest copies
 * elements, and an integer result of linear or cubic is the blend truncated
 * toward zero, as the ONNX reference implementation's astype gives it.
 *
 * Opset 18 adds keep_aspect_ratio_policy, which applies to sizes (with
 * scales it changes nothing): "stretch" (default) as above; "not_larger" and
 * "not_smaller" take one scale for every axis of axes, the smallest or the
 * largest of size / in, and give those axes floor(in * scale + 0.5)
 * elements, with length = in * scale. Opset 18's antialias=1 widens the
 * linear and cubic kernels when downsampling: with s = min(scale, 1), input
 * element i + k (i = ceil(x_original) - 1, t = x_original - i) gets weight
 * K(s (k - t)) for the k with |s (k - t)| within the kernel's support (1 for
 * linear, K(u) = max(0, 1 - |u|); 2 for cubic, Keys' W), the weights then
 * divided by their sum before exclude_outside applies, as ONNX's reference
 * implementation computes them; mode nearest with antialias=1 is refused, as
 * there. Opset 19's half_pixel_symmetric maps x to
 *   in / 2 * (1 - out / length) + (x + 0.5) / scale - 0.5,
 * which differs from half_pixel when the output size was rounded.
 *
 * Unsupported, with D5_ERR_UNSUPPORTED naming what: opsets before 11 (inputs
 * X and scales only). The gradient with respect to X is the adjoint of the
 * forward map: each output gradient is scattered back with the forward
 * weights.
 * https://onnx.ai/onnx/operators/onnx__Resize.html */
#include "util.h"

#include <math.h>
#include <string.h>

/* The attribute through which a network passes its opset version
 * (D5_ATTR_OPSET in d5/network.h). */
#define OPSET_ATTR "__opset"

typedef enum { NEAREST, LINEAR, CUBIC } resize_mode;
typedef enum {
    HALF_PIXEL,
    HALF_PIXEL_SYMMETRIC,
    PYTORCH_HALF_PIXEL,
    ALIGN_CORNERS,
    ASYMMETRIC,
    TF_HALF_PIXEL_FOR_NN,
    TF_CROP_AND_RESIZE
} coord_mode;
typedef enum { ROUND_PREFER_FLOOR, ROUND_PREFER_CEIL, FLOOR, CEIL } nearest_mode;
typedef enum { STRETCH, NOT_LARGER, NOT_SMALLER } aspect_policy;

typedef struct resize {
    int32_t ndim;
    int64_t in[D5_MAX_DIMS], out[D5_MAX_DIMS], stride[D5_MAX_DIMS];
    int64_t taps[D5_MAX_DIMS]; /* input elements read along each axis: 1 to k[d] */
    /* Table entries per output coordinate along each axis: 2, 4 for cubic,
     * more for antialias when downsampling. */
    int64_t k[D5_MAX_DIMS];
    /* Along axis d, output coordinate x reads the input elements idx[d][k[d]
     * x + j] with weights w[d][k[d] x + j], j < taps[d]; idx[d][k[d] x] < 0
     * marks a coordinate outside the crop (tf_crop_and_resize): the output
     * element is then `extrapolation`. */
    int64_t *idx[D5_MAX_DIMS];
    double *w[D5_MAX_DIMS];
    double extrapolation;
    int64_t out_numel;
    void *tables; /* one block holding every idx and w */
} resize;

static void resize_destroy(void *state)
{
    resize *r = state;
    if (!r) return;
    d5_free(r->tables);
    d5_free(r);
}

/* Looks `value` up in names[0..n-1]; -1 when absent. */
static int pick(const char *value, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0) return i;
    return -1;
}

static const char *const mode_names[] = {"nearest", "linear", "cubic"};
static const char *const coord_names[] = {
    "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
static const char *const policy_names[] = {"stretch", "not_larger", "not_smaller"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                            "ceil"};

/* The string-valued attributes, each checked against what is supported. */
typedef struct resize_attrs {
    resize_mode mode;
    coord_mode coord;
    nearest_mode nearest;
    aspect_policy policy;
    double cubic_a, extrapolation;
    int exclude_outside, antialias;
    int64_t opset;
} resize_attrs;

static d5_status read_choice(const d5_attrs *attrs, const char *name, const char *def,
                             const char *const *names, int n, int *out)
{
    const char *v;
    d5_status s = d5_attrs_string(attrs, name, def, &v);
    if (s != D5_OK) return s;
    *out = pick(v, names, n);
    if (*out >= 0) return D5_OK;
    return d5_error(D5_ERR_INVALID, "Resize: %s is '%s', not a value ONNX defines", name, v);
}

/* D5_ERR_INVALID when an attribute of opset `since` is set in an older one. */
static d5_status need_opset(int64_t opset, int64_t since, int set, const char *what)
{
    if (!set || opset >= since) return D5_OK;
    return d5_error(D5_ERR_INVALID, "Resize: %s belongs to opset %lld and later, not to opset %lld",
                    what, (long long)since, (long long)opset);
}

static d5_status read_attrs(const d5_attrs *attrs, resize_attrs *a)
{
    int mode, coord, nearest, policy;
    int64_t opset, antialias, exclude_outside;
    d5_status s = d5_attrs_int(attrs, OPSET_ATTR, 19, &opset);
    if (s == D5_OK && opset < 11)
        s = d5_error(D5_ERR_UNSUPPORTED,
                     "Resize: opset %lld is not supported (the inputs X, roi, scales, sizes of "
                     "opset 11 and later are)",
                     (long long)opset);
    if (s == D5_OK) s = read_choice(attrs, "mode", "nearest", mode_names, 3, &mode);
    if (s == D5_OK)
        s = read_choice(attrs, "coordinate_transformation_mode", "half_pixel", coord_names, 7,
                        &coord);
    if (s == D5_OK)
        s = read_choice(attrs, "nearest_mode", "round_prefer_floor", nearest_names, 4, &nearest);
    if (s == D5_OK)
        s = read_choice(attrs, "keep_aspect_ratio_policy", "stretch", policy_names, 3, &policy);
    if (s == D5_OK) s = d5_attrs_int(attrs, "antialias", 0, &antialias);
    if (s == D5_OK) s = d5_attrs_int(attrs, "exclude_outside", 0, &exclude_outside);
    if (s == D5_OK) s = d5_attrs_float(attrs, "cubic_coeff_a", -0.75, &a->cubic_a);
    if (s == D5_OK) s = d5_attrs_float(attrs, "extrapolation_value", 0, &a->extrapolation);
    if (s == D5_OK) s = need_opset(opset, 18, antialias != 0, "antialias");
    if (s == D5_OK) s = need_opset(opset, 18, policy != STRETCH, "keep_aspect_ratio_policy");
    if (s == D5_OK)
        s = need_opset(opset, 19, coord == HALF_PIXEL_SYMMETRIC,
                       "coordinate_transformation_mode 'half_pixel_symmetric'");
    if (s != D5_OK) return s;
    if (antialias != 0 && antialias != 1)
        return d5_error(D5_ERR_INVALID, "Resize: antialias is %lld, expected 0 or 1",
                        (long long)antialias);
    if (antialias && mode == NEAREST)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Resize: antialias=1 is not supported with mode 'nearest' (it widens the "
                        "linear and cubic kernels; ONNX's reference implementation refuses it "
                        "too)");
    if (exclude_outside != 0 && exclude_outside != 1)
        return d5_error(D5_ERR_INVALID, "Resize: exclude_outside is %lld, expected 0 or 1",
                        (long long)exclude_outside);
    a->exclude_outside = (int)exclude_outside;
    a->antialias = (int)antialias;
    a->opset = opset;
    a->mode = (resize_mode)mode;
    a->coord = (coord_mode)coord;
    a->nearest = (nearest_mode)nearest;
    a->policy = (aspect_policy)policy;
    return D5_OK;
}

/* 1 when input i is given with at least one value (opset 11 passes an empty
 * tensor for the unused one of scales and sizes). */
static int nonempty(const d5_tensor *in, int32_t nin, int32_t i)
{
    return d5__has_input(in, nin, i) && d5_tensor_desc_numel(&in[i].desc) > 0;
}

/* Reads roi (input 1) for tf_crop_and_resize into per-axis start[] and end[]:
 * naxes starts then naxes ends, for axes[0..naxes-1]; 0 and 1 elsewhere or
 * when roi is omitted or empty. */
static d5_status read_roi(const d5_tensor *in, int32_t nin, const int32_t *axes, int64_t naxes,
                          int32_t rank, double *start, double *end)
{
    for (int32_t d = 0; d < rank; d++) {
        start[d] = 0;
        end[d] = 1;
    }
    if (!nonempty(in, nin, 1)) return D5_OK;
    double roi[2 * D5_MAX_DIMS];
    int64_t n;
    d5_status s = d5__const_floats("Resize", in, nin, 1, "roi", roi, 2 * D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (n != 2 * naxes)
        return d5_error(D5_ERR_INVALID,
                        "Resize: roi (input 1) has %lld values, expected %lld (a start and an "
                        "end per resized axis)",
                        (long long)n, (long long)(2 * naxes));
    for (int64_t k = 0; k < naxes; k++) {
        start[axes[k]] = roi[k];
        end[axes[k]] = roi[naxes + k];
    }
    return D5_OK;
}

/* keep_aspect_ratio_policy not_larger or not_smaller: one scale, the
 * smallest or largest of the axes' size / in (empty axes left out), for every
 * axis of axes, and out = floor(in * scale + 0.5) there. */
static void keep_aspect_ratio(const resize_attrs *a, const d5_tensor_desc *x, const int32_t *axes,
                              int64_t naxes, double *scale, double *length, int64_t *out)
{
    double common = 0;
    int found = 0;
    for (int64_t k = 0; k < naxes; k++) {
        double v = scale[axes[k]];
        if (x->shape[axes[k]] == 0) continue;
        if (!found || (a->policy == NOT_LARGER ? v < common : v > common)) common = v;
        found = 1;
    }
    for (int64_t k = 0; found && k < naxes; k++) {
        int32_t d = axes[k];
        if (x->shape[d] == 0) continue;
        scale[d] = common;
        length[d] = (double)x->shape[d] * common;
        out[d] = (int64_t)floor(length[d] + 0.5);
    }
}

/* Reads axes (default: all) and scales or sizes into per-axis scale[],
 * length[] (in * scale, or the size) and out[], and for tf_crop_and_resize
 * roi into start[] and end[]. */
static d5_status output_shape(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                              const resize_attrs *a, double *scale, double *length, int64_t *out,
                              double *start, double *end)
{
    const d5_tensor_desc *x = &in[0].desc;
    int32_t rank = x->ndim, axes[D5_MAX_DIMS];
    const int64_t *given_axes;
    int64_t naxes;
    d5_status s = d5_attrs_ints(attrs, "axes", &given_axes, &naxes);
    if (s != D5_OK) return s;
    if (!given_axes) naxes = rank;
    if (naxes > rank)
        return d5_error(D5_ERR_INVALID, "Resize: axes has %lld values for a %d-d X",
                        (long long)naxes, (int)rank);
    int seen[D5_MAX_DIMS] = {0};
    for (int64_t k = 0; k < naxes; k++) {
        if (!given_axes) {
            axes[k] = (int32_t)k;
            continue;
        }
        s = d5__axis("Resize", given_axes[k], rank, &axes[k]);
        if (s != D5_OK) return s;
        if (seen[axes[k]]++)
            return d5_error(D5_ERR_INVALID, "Resize: axes names axis %d twice", (int)axes[k]);
    }
    for (int32_t d = 0; d < rank; d++) {
        start[d] = 0;
        end[d] = 1;
    }
    if (a->coord == TF_CROP_AND_RESIZE) s = read_roi(in, nin, axes, naxes, rank, start, end);
    if (s != D5_OK) return s;
    int has_scales = nonempty(in, nin, 2), has_sizes = nonempty(in, nin, 3);
    if (has_scales == has_sizes)
        return d5_error(D5_ERR_INVALID,
                        "Resize: exactly one of scales (input 2) and sizes (input 3) must be "
                        "given, %s",
                        has_scales ? "both are" : "neither is");
    double scales[D5_MAX_DIMS];
    int64_t sizes[D5_MAX_DIMS], n;
    if (has_scales)
        s = d5__const_floats("Resize", in, nin, 2, "scales", scales, D5_MAX_DIMS, &n);
    else
        s = d5__const_ints("Resize", in, nin, 3, "sizes", sizes, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (n != naxes)
        return d5_error(D5_ERR_INVALID, "Resize: %s has %lld values, expected %lld (%s)",
                        has_scales ? "scales" : "sizes", (long long)n, (long long)naxes,
                        given_axes ? "one per entry of axes" : "one per axis of X");
    for (int32_t d = 0; d < rank; d++) {
        scale[d] = 1;
        length[d] = (double)x->shape[d];
        out[d] = x->shape[d];
    }
    for (int64_t k = 0; k < naxes; k++) {
        int32_t d = axes[k];
        double in_d = (double)x->shape[d];
        if (has_scales) {
            if (!(scales[k] > 0) || !isfinite(scales[k]))
                return d5_error(D5_ERR_INVALID, "Resize: scales[%lld] is %g, must be positive",
                                (long long)k, scales[k]);
            scale[d] = scales[k];
            length[d] = in_d * scales[k];
            if (a->coord == TF_CROP_AND_RESIZE && a->opset >= 18) length[d] *= end[d] - start[d];
            out[d] = (int64_t)floor(length[d]);
        } else {
            if (sizes[k] < 0)
                return d5_error(D5_ERR_INVALID, "Resize: sizes[%lld] is %lld, must be >= 0",
                                (long long)k, (long long)sizes[k]);
            out[d] = sizes[k];
            length[d] = (double)sizes[k];
            scale[d] = x->shape[d] > 0 ? (double)sizes[k] / in_d : 1;
        }
        if (out[d] > 0 && x->shape[d] == 0)
            return d5_error(D5_ERR_SHAPE, "Resize: axis %d of X is empty but the output has %lld",
                            (int)d, (long long)out[d]);
    }
    if (!has_scales && a->policy != STRETCH)
        keep_aspect_ratio(a, x, axes, naxes, scale, length, out);
    return D5_OK;
}

/* The input coordinate that output coordinate x reads along one axis of
 * `out` output elements; start and end are the axis's roi
 * (tf_crop_and_resize). */
static double original(coord_mode m, double x, double scale, double in, double length, double out,
                       double start, double end)
{
    switch (m) {
    case HALF_PIXEL_SYMMETRIC: return in / 2 * (1 - out / length) + (x + 0.5) / scale - 0.5;
    case TF_CROP_AND_RESIZE:
        return length > 1 ? start * (in - 1) + x * (end - start) * (in - 1) / (length - 1)
                          : (start + end) * (in - 1) / 2;
    case PYTORCH_HALF_PIXEL: return length > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case ALIGN_CORNERS: return length == 1 ? 0 : x * (in - 1) / (length - 1);
    case ASYMMETRIC: return x / scale;
    case TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case HALF_PIXEL:
    default: return (x + 0.5) / scale - 0.5;
    }
}

static double round_nearest(nearest_mode m, double v)
{
    switch (m) {
    case ROUND_PREFER_CEIL: return floor(v + 0.5);
    case FLOOR: return floor(v);
    case CEIL: return ceil(v);
    case ROUND_PREFER_FLOOR:
    default: return ceil(v - 0.5);
    }
}

static int64_t clamp(double v, int64_t n)
{
    return v < 0 ? 0 : v > (double)(n - 1) ? n - 1 : (int64_t)v;
}

/* Keys' cubic convolution kernel W(s), s >= 0, for coefficient a. */
static double keys(double s, double a)
{
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0;
}

/* The four cubic taps around input coordinate v of an axis of n elements. */
static void cubic_taps(const resize_attrs *a, double v, int64_t n, int64_t *idx, double *w)
{
    double i = ceil(v) - 1, t = v - i, sum = 0;
    for (int j = 0; j < 4; j++) {
        double at = i - 1 + j;
        w[j] = keys(fabs(t + 1 - j), a->cubic_a);
        if (a->exclude_outside && (at < 0 || at > (double)(n - 1))) w[j] = 0;
        idx[j] = clamp(at, n);
        sum += w[j];
    }
    if (a->exclude_outside && sum != 0)
        for (int j = 0; j < 4; j++) w[j] /= sum;
}

/* The most taps an antialiased kernel may have along one axis. */
#define MAX_TAPS ((double)(1 << 24))

/* The number of taps of the antialiased kernel along an axis resized by
 * `scale` > 0: the integers k with |min(scale, 1) (k - t)| inside the support
 * (1 for linear, 2 for cubic) for some t in (0, 1]: 2 - 2 (floor(-support /
 * s) + 1), 2 or 4 when upsampling. In double: it may exceed MAX_TAPS. */
static double antialias_count(const resize_attrs *a, double scale)
{
    double support = a->mode == CUBIC ? 2 : 1;
    return 2 - 2 * (floor(-support / fmin(scale, 1)) + 1);
}

/* Divides w[0..n-1] by their sum (left alone when it is 0). */
static void normalise(double *w, int64_t n)
{
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += w[j];
    if (sum != 0)
        for (int64_t j = 0; j < n; j++) w[j] /= sum;
}

/* The `count` antialiased taps around input coordinate v of an axis of n
 * elements: elements i + k, i = ceil(v) - 1 and k from 1 - count / 2, with
 * weights K(s (k - t)) (t = v - i, s = min(scale, 1)) divided by their sum;
 * then exclude_outside as for cubic. */
static void antialias_taps(const resize_attrs *a, double v, double scale, int64_t n, int64_t count,
                           int64_t *idx, double *w)
{
    double s = fmin(scale, 1), i = ceil(v) - 1, t = v - i;
    for (int64_t j = 0; j < count; j++) {
        double k = (double)(1 - count / 2 + j), u = fabs(s * (k - t));
        w[j] = a->mode == CUBIC ? keys(u, a->cubic_a) : fmax(0, 1 - u);
        idx[j] = clamp(i + k, n);
    }
    normalise(w, count);
    if (!a->exclude_outside) return;
    for (int64_t j = 0; j < count; j++) {
        double at = i + (double)(1 - count / 2 + j);
        if (at < 0 || at > (double)(n - 1)) w[j] = 0;
    }
    normalise(w, count);
}

/* Fills the per-axis tables of indices and weights. */
static void fill_tables(resize *r, const resize_attrs *a, const double *scale, const double *length,
                        const double *start, const double *end)
{
    for (int32_t d = 0; d < r->ndim; d++) {
        int64_t k = r->k[d];
        r->taps[d] = 1;
        for (int64_t x = 0; x < r->out[d]; x++) {
            double v = original(a->coord, (double)x, scale[d], (double)r->in[d], length[d],
                                (double)r->out[d], start[d], end[d]);
            int64_t *idx = r->idx[d] + k * x;
            double *w = r->w[d] + k * x;
            for (int64_t j = 0; j < k; j++) {
                idx[j] = 0;
                w[j] = 0;
            }
            if (a->coord == TF_CROP_AND_RESIZE && !(v >= 0 && v <= (double)(r->in[d] - 1))) {
                idx[0] = -1;
                continue;
            }
            if (a->antialias) {
                antialias_taps(a, v, scale[d], r->in[d], k, idx, w);
                r->taps[d] = k;
                continue;
            }
            if (a->mode == CUBIC) {
                cubic_taps(a, v, r->in[d], idx, w);
                r->taps[d] = 4;
                continue;
            }
            if (a->mode == NEAREST) {
                idx[0] = idx[1] = clamp(round_nearest(a->nearest, v), r->in[d]);
                w[0] = 1;
                continue;
            }
            double lo = floor(v);
            idx[0] = clamp(lo, r->in[d]);
            idx[1] = clamp(lo + 1, r->in[d]);
            w[1] = v - lo;
            w[0] = 1 - w[1];
            if (w[1] != 0) r->taps[d] = 2;
        }
    }
}

static d5_status resize_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    resize_attrs a;
    memset(&a, 0, sizeof a);
    double scale[D5_MAX_DIMS], length[D5_MAX_DIMS], start[D5_MAX_DIMS], end[D5_MAX_DIMS];
    int64_t shape[D5_MAX_DIMS];
    d5_status s = d5__need_types("Resize", in, nin, 0, D5__ANY);
    if (s == D5_OK) s = read_attrs(attrs, &a);
    if (s == D5_OK) s = output_shape(in, nin, attrs, &a, scale, length, shape, start, end);
    if (s != D5_OK) return s;
    resize *r = d5_calloc(1, sizeof *r, "Resize");
    if (!r) return D5_ERR_NOMEM;
    r->ndim = in[0].desc.ndim;
    r->extrapolation = a.extrapolation;
    r->out_numel = 1;
    int64_t entries = 0;
    for (int32_t d = 0; d < r->ndim; d++) {
        r->k[d] = a.mode == CUBIC ? 4 : 2;
        if (a.antialias && shape[d] > 0) {
            double count = antialias_count(&a, scale[d]);
            if (!(count <= MAX_TAPS)) {
                resize_destroy(r);
                return d5_error(D5_ERR_UNSUPPORTED,
                                "Resize: antialias at scale %g along axis %d would blend %g input "
                                "elements into each output element, more than %g",
                                scale[d], (int)d, count, MAX_TAPS);
            }
            r->k[d] = (int64_t)count;
        }
        r->in[d] = in[0].desc.shape[d];
        r->out[d] = shape[d];
        r->out_numel *= shape[d];
        entries += r->k[d] * shape[d];
    }
    d5__strides(&in[0].desc, r->stride);
    size_t bytes = (size_t)(entries ? entries : 1) * (sizeof(int64_t) + sizeof(double));
    r->tables = d5_alloc(bytes, "Resize tables");
    if (!r->tables) {
        resize_destroy(r);
        return D5_ERR_NOMEM;
    }
    int64_t *idx = r->tables;
    double *w = (double *)(idx + entries);
    for (int32_t d = 0; d < r->ndim; d++) {
        r->idx[d] = idx;
        r->w[d] = w;
        idx += r->k[d] * shape[d];
        w += r->k[d] * shape[d];
    }
    fill_tables(r, &a, scale, length, start, end);
    out[0] = in[0].desc;
    for (int32_t d = 0; d < r->ndim; d++) out[0].shape[d] = shape[d];
    *state = r;
    return D5_OK;
}

/* Visits the input elements that output element o reads: y[o] = sum over the
 * visited (index, weight) of weight * x[index]. Forward gathers (dst[o] =
 * ...); the adjoint scatters (dst[index] += weight * src[o]). */
static void apply(const resize *r, const double *src, double *dst, int adjoint)
{
    int64_t coord[D5_MAX_DIMS], tap[D5_MAX_DIMS];
    for (int64_t o = 0; o < r->out_numel; o++) {
        int64_t rest = o;
        for (int32_t d = r->ndim - 1; d >= 0; d--) {
            coord[d] = rest % r->out[d];
            rest /= r->out[d];
            tap[d] = 0;
        }
        int outside = 0;
        for (int32_t d = 0; d < r->ndim; d++) outside |= r->idx[d][r->k[d] * coord[d]] < 0;
        if (outside) {
            if (!adjoint) dst[o] = r->extrapolation;
            continue;
        }
        double acc = 0;
        for (;;) {
            double weight = 1;
            int64_t at = 0;
            for (int32_t d = 0; d < r->ndim; d++) {
                weight *= r->w[d][r->k[d] * coord[d] + tap[d]];
                at += r->idx[d][r->k[d] * coord[d] + tap[d]] * r->stride[d];
            }
            if (weight != 0) {
                if (adjoint)
                    dst[at] += weight * src[o];
                else
                    acc += weight * src[at];
            }
            /* The next combination of taps, last axis fastest. */
            int32_t d = r->ndim - 1;
            while (d >= 0 && ++tap[d] == r->taps[d]) tap[d--] = 0;
            if (d < 0) break;
        }
        if (!adjoint) dst[o] = acc;
    }
}

static d5_status resize_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    apply(state, in[0].data, out[0].data, 0);
    return D5_OK;
}

/* Only X has a gradient: roi, scales and sizes do not change the result
 * smoothly (their gradients stay zero). */
static d5_status resize_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    if (gin[0].data) apply(state, gout[0].data, gin[0].data, 1);
    return D5_OK;
}

/* A multiply-add per input element read. */
static double resize_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const resize *r = state;
    double reads = 1;
    for (int32_t d = 0; d < r->ndim; d++) reads *= (double)r->taps[d];
    return 2 * reads * (double)r->out_numel;
}

D5_REF_OPERATOR(Resize, 1, 4, 1, 1, resize_create, resize_forward, resize_backward, resize_destroy,
                resize_flops);
