/* RoiAlign (ONNX opsets 10 and 16): pools each region of interest of the
 * floating-point X [N, C, H, W] into a [C, output_height, output_width] grid
 * of bins. rois [R, 4] holds [x1, y1, x2, y2] in image coordinates (times
 * spatial_scale, default 1, for X), batch_indices [R] (int64) the image of
 * each; Y is [R, C, output_height, output_width] (defaults 1).
 *
 * coordinate_transformation_mode "half_pixel" (opset 16's default) shifts the
 * scaled corners by -0.5; "output_half_pixel" (opset 10's behaviour) does not
 * and widens a region to at least 1 x 1. A bin averages (mode "avg", the
 * default) sampling_ratio x sampling_ratio points spaced evenly inside it
 * (sampling_ratio 0: ceil(region size / output size) per axis), each read
 * bilinearly; a point more than one pixel outside X reads 0, one within clamps
 * to the edge. mode "max" takes, as ONNX Runtime and ONNX's reference do, the
 * largest of the four weighted corner terms w * x over the bin's points. A
 * batch index outside [0, N) is D5_ERR_RANGE at run time. No gradient.
 * https://onnx.ai/onnx/operators/onnx__RoiAlign.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef struct roialign {
    int max_mode, half_pixel;
    int64_t oh, ow, sampling;
    double scale;
    d5_nchw x; /* X's sizes */
    int64_t rois;
} roialign;

static d5_status read_choices(const d5_attrs *attrs, roialign *r)
{
    const char *mode, *coord;
    int64_t opset;
    d5_status s = d5__ref_opset("RoiAlign", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_string(attrs, "mode", "avg", &mode);
    if (s == D5_OK)
        s = d5_attrs_string(attrs, "coordinate_transformation_mode",
                            opset < 16 ? "output_half_pixel" : "half_pixel", &coord);
    if (s != D5_OK) return s;
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        return d5_error(D5_ERR_INVALID, "RoiAlign: mode is '%s', expected avg or max", mode);
    if (strcmp(coord, "half_pixel") != 0 && strcmp(coord, "output_half_pixel") != 0)
        return d5_error(D5_ERR_INVALID,
                        "RoiAlign: coordinate_transformation_mode is '%s', expected half_pixel or "
                        "output_half_pixel",
                        coord);
    r->max_mode = strcmp(mode, "max") == 0;
    r->half_pixel = strcmp(coord, "half_pixel") == 0;
    return D5_OK;
}

static d5_status read_sizes(const d5_attrs *attrs, roialign *r)
{
    d5_status s = d5_attrs_int(attrs, "output_height", 1, &r->oh);
    if (s == D5_OK) s = d5_attrs_int(attrs, "output_width", 1, &r->ow);
    if (s == D5_OK) s = d5_attrs_int(attrs, "sampling_ratio", 0, &r->sampling);
    if (s == D5_OK) s = d5_attrs_float(attrs, "spatial_scale", 1, &r->scale);
    if (s != D5_OK) return s;
    if (r->oh < 1 || r->ow < 1)
        return d5_error(D5_ERR_INVALID,
                        "RoiAlign: output_height %lld and output_width %lld must be >= 1",
                        (long long)r->oh, (long long)r->ow);
    return d5__need_not_negative("RoiAlign", "sampling_ratio", r->sampling);
}

static d5_status roialign_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    roialign r;
    memset(&r, 0, sizeof r);
    d5_status s = d5__need_float("RoiAlign", in, nin, 0);
    if (s == D5_OK) s = d5__need_float("RoiAlign", in, nin, 1);
    if (s == D5_OK) s = d5__need_types("RoiAlign", in, nin, 2, D5__DT(D5_I64));
    if (s == D5_OK) s = read_choices(attrs, &r);
    if (s == D5_OK) s = read_sizes(attrs, &r);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc, *rois = &in[1].desc, *idx = &in[2].desc;
    if (x->ndim != 4)
        return d5_error(D5_ERR_SHAPE, "RoiAlign: input 0 (X) has %d dims, expected 4",
                        (int)x->ndim);
    if (x->shape[2] < 1 || x->shape[3] < 1)
        return d5_error(D5_ERR_SHAPE, "RoiAlign: input 0 (X) has an empty image (H or W is 0)");
    if (rois->ndim != 2 || rois->shape[1] != 4)
        return d5_error(D5_ERR_SHAPE, "RoiAlign: input 1 (rois) must be [num_rois, 4]");
    if (idx->ndim != 1 || idx->shape[0] != rois->shape[0])
        return d5_error(D5_ERR_SHAPE,
                        "RoiAlign: input 2 (batch_indices) must be [%lld], one per roi",
                        (long long)rois->shape[0]);
    r.x = d5__nchw(x);
    r.rois = rois->shape[0];
    out[0] = *x;
    out[0].shape[0] = r.rois;
    out[0].shape[2] = r.oh;
    out[0].shape[3] = r.ow;
    return d5__ref_state(state, &r, sizeof r, "RoiAlign");
}

/* The four corners and weights of the bilinear read at (y, x); weights all 0
 * for a point more than a pixel outside the image. */
typedef struct taps {
    int64_t at[4];
    double w[4];
} taps;

static taps bilinear(const roialign *r, double y, double x)
{
    taps t;
    memset(&t, 0, sizeof t);
    if (!(y >= -1.0 && y <= (double)r->x.h && x >= -1.0 && x <= (double)r->x.w)) return t;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= r->x.h - 1) {
        y0 = y1 = r->x.h - 1;
        y = (double)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= r->x.w - 1) {
        x0 = x1 = r->x.w - 1;
        x = (double)x0;
    } else {
        x1 = x0 + 1;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    t.at[0] = y0 * r->x.w + x0;
    t.at[1] = y0 * r->x.w + x1;
    t.at[2] = y1 * r->x.w + x0;
    t.at[3] = y1 * r->x.w + x1;
    t.w[0] = hy * hx;
    t.w[1] = hy * lx;
    t.w[2] = ly * hx;
    t.w[3] = ly * lx;
    return t;
}

/* Pools one roi (corners in box[0..3]) of one channel plane into y. */
static void pool_roi(const roialign *r, const double *box, const double *plane, double *y)
{
    double offset = r->half_pixel ? 0.5 : 0;
    double x1 = box[0] * r->scale - offset, y1 = box[1] * r->scale - offset;
    double width = box[2] * r->scale - offset - x1, height = box[3] * r->scale - offset - y1;
    if (!r->half_pixel) {
        width = fmax(width, 1);
        height = fmax(height, 1);
    }
    double bin_h = height / (double)r->oh, bin_w = width / (double)r->ow;
    int64_t gh = r->sampling > 0 ? r->sampling : (int64_t)ceil(height / (double)r->oh);
    int64_t gw = r->sampling > 0 ? r->sampling : (int64_t)ceil(width / (double)r->ow);
    double count = (double)(gh * gw > 0 ? gh * gw : 1);
    for (int64_t ph = 0; ph < r->oh; ph++)
        for (int64_t pw = 0; pw < r->ow; pw++) {
            double acc = 0;
            int first = 1;
            for (int64_t iy = 0; iy < gh; iy++) {
                double yy = y1 + (double)ph * bin_h + ((double)iy + 0.5) * bin_h / (double)gh;
                for (int64_t ix = 0; ix < gw; ix++) {
                    double xx = x1 + (double)pw * bin_w + ((double)ix + 0.5) * bin_w / (double)gw;
                    taps t = bilinear(r, yy, xx);
                    for (int k = 0; k < 4; k++) {
                        double v = t.w[k] * plane[t.at[k]];
                        if (!r->max_mode)
                            acc += v;
                        else if (first || v > acc)
                            acc = v;
                        first = 0;
                    }
                }
            }
            y[ph * r->ow + pw] = r->max_mode ? acc : acc / count;
        }
}

static d5_status roialign_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const roialign *r = state;
    int64_t plane = r->x.h * r->x.w, bins = r->oh * r->ow;
    for (int64_t k = 0; k < r->rois; k++) {
        double b = in[2].data[k];
        if (!(b >= 0 && b < (double)r->x.n))
            return d5_error(
                D5_ERR_RANGE,
                "RoiAlign: batch_indices[%lld] is %g, outside [0, %lld) (the batch of X)",
                (long long)k, b, (long long)r->x.n);
        for (int64_t c = 0; c < r->x.c; c++)
            pool_roi(r, in[1].data + 4 * k, in[0].data + ((int64_t)b * r->x.c + c) * plane,
                     out[0].data + (k * r->x.c + c) * bins);
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(RoiAlign, 3, 3, 1, 1, roialign_create, roialign_forward, NULL, NULL);
