/* GridSample (ONNX opsets 16 and 20; opset 20's mode names "linear" and
 * "cubic" are taken as "bilinear" and "bicubic"): Y[n, c, i, j] samples X
 * [N, C, H, W] (any numeric type) at the point grid[n, i, j] = (x, y) of the
 * floating-point grid [N, Ho, Wo, 2], normalised to [-1, 1] (x along W, y
 * along H). Y is [N, C, Ho, Wo] of X's type. Opset 20's volumes sample X
 * [N, C, D, H, W] at grid[n, i, j, k] = (x, y, z) of grid [N, Do, Ho, Wo, 3]
 * (z along D) into Y [N, C, Do, Ho, Wo], axis by axis as below (trilinear,
 * tricubic); other ranks are not supported.
 *
 * A normalised coordinate g becomes the pixel coordinate ((g + 1) / 2) *
 * (size - 1) with align_corners=1 and ((g + 1) * size - 1) / 2 with 0 (the
 * default), as torch.nn.functional.grid_sample does. mode "bilinear" (the
 * default) blends the 2 x 2 pixels around the point (2 x 2 x 2 in a volume),
 * "nearest" takes the pixel at the coordinates rounded half to even,
 * "bicubic" blends the 4 x 4 (x 4) pixels around it with Keys' weights for
 * a = -0.75. padding_mode says what lies outside the image: "zeros" (default)
 * reads 0 there; "border" clamps the coordinate to [0, size - 1];
 * "reflection" reflects it about the borders (the pixel centres 0 and
 * size - 1 with align_corners=1, else -0.5 and size - 0.5) and clamps. For
 * bicubic, padding applies to each of the pixels read, not to the point. No
 * gradient.
 * https://onnx.ai/onnx/operators/onnx__GridSample.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_padding;

/* The spatial axes the ref backend samples: 2 (images) or 3 (volumes). */
#define GS_MAX_AXES 3

typedef struct gridsample {
    gs_mode mode;
    gs_padding padding;
    int align_corners;
    int32_t r;               /* spatial axes: 2 or 3 */
    int64_t batch, channels; /* N, C */
    int64_t in[GS_MAX_AXES]; /* X's spatial sizes, (H, W) or (D, H, W) */
    int64_t in_size, points; /* elements of an X plane and of a Y plane */
} gridsample;

static d5_status pick_mode(const d5_attrs *attrs, gs_mode *mode, gs_padding *padding)
{
    static const char *const modes[] = {"bilinear", "nearest", "bicubic", "linear", "cubic"};
    static const gs_mode mode_of[] = {GS_BILINEAR, GS_NEAREST, GS_BICUBIC, GS_BILINEAR, GS_BICUBIC};
    static const char *const paddings[] = {"zeros", "border", "reflection"};
    const char *m, *p;
    d5_status s = d5_attrs_string(attrs, "mode", "bilinear", &m);
    if (s == D5_OK) s = d5_attrs_string(attrs, "padding_mode", "zeros", &p);
    if (s != D5_OK) return s;
    int found = 0;
    for (int i = 0; i < 5 && !found; i++)
        if (strcmp(m, modes[i]) == 0) {
            *mode = mode_of[i];
            found = 1;
        }
    if (!found)
        return d5_error(D5_ERR_INVALID,
                        "GridSample: mode is '%s', expected bilinear, nearest or bicubic", m);
    for (int i = 0; i < 3; i++)
        if (strcmp(p, paddings[i]) == 0) {
            *padding = (gs_padding)i;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID,
                    "GridSample: padding_mode is '%s', expected zeros, border or reflection", p);
}

/* Checks grid against X: [N, Ho, Wo, 2] for a 4-d X, [N, Do, Ho, Wo, 3]
 * for a 5-d one. */
static d5_status check_grid(const d5_tensor_desc *x, const d5_tensor_desc *grid)
{
    int32_t r = x->ndim - 2;
    int ok = grid->ndim == x->ndim && grid->shape[0] == x->shape[0] && grid->shape[r + 1] == r;
    if (ok) return D5_OK;
    char got[96];
    d5__shape_str(grid, got, sizeof got);
    return d5_error(D5_ERR_SHAPE, "GridSample: input 1 (grid) has shape %s, expected [%lld, %s]",
                    got, (long long)x->shape[0], r == 2 ? "Ho, Wo, 2" : "Do, Ho, Wo, 3");
}

static d5_status gridsample_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    gridsample g;
    memset(&g, 0, sizeof g);
    int64_t align;
    d5_status s = d5__need_types("GridSample", in, nin, 0, D5__NUMBERS);
    if (s == D5_OK) s = d5__need_float("GridSample", in, nin, 1);
    if (s == D5_OK) s = pick_mode(attrs, &g.mode, &g.padding);
    if (s == D5_OK) s = d5_attrs_int(attrs, "align_corners", 0, &align);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc, *grid = &in[1].desc;
    if (x->ndim != 4 && x->ndim != 5)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "GridSample: input 0 (X) has %d dims, expected 4 or 5 ([N, C, H, W] or "
                        "[N, C, D, H, W]; the ref backend samples 2-d images and 3-d volumes)",
                        (int)x->ndim);
    s = check_grid(x, grid);
    if (s != D5_OK) return s;
    if (align != 0 && align != 1)
        return d5_error(D5_ERR_INVALID, "GridSample: align_corners is %lld, expected 0 or 1",
                        (long long)align);
    g.align_corners = (int)align;
    g.r = x->ndim - 2;
    g.batch = x->shape[0];
    g.channels = x->shape[1];
    g.in_size = g.points = 1;
    out[0] = *x;
    for (int32_t i = 0; i < g.r; i++) {
        g.in[i] = x->shape[2 + i];
        g.in_size *= g.in[i];
        out[0].shape[2 + i] = grid->shape[1 + i];
        g.points *= grid->shape[1 + i];
    }
    return d5__ref_state(state, &g, sizeof g, "GridSample");
}

/* The pixel coordinate of normalised coordinate v along an axis of n pixels. */
static double unnormalize(const gridsample *g, double v, int64_t n)
{
    return g->align_corners ? (v + 1) / 2 * (double)(n - 1) : ((v + 1) * (double)n - 1) / 2;
}

/* v reflected into [lo, hi] (twice_lo = 2 lo, twice_hi = 2 hi). */
static double reflect(double v, double twice_lo, double twice_hi)
{
    if (twice_lo == twice_hi) return 0;
    double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    v = fabs(v - lo);
    double extra = fmod(v, span);
    return fmod(floor(v / span), 2) == 0 ? extra + lo : span - extra + lo;
}

/* v under border or reflection padding (unchanged for zeros). */
static double pad_coord(const gridsample *g, double v, int64_t n)
{
    if (g->padding == GS_ZEROS) return v;
    if (g->padding == GS_REFLECTION) {
        v = g->align_corners ? reflect(v, 0, 2 * (double)(n - 1))
                             : reflect(v, -1, 2 * (double)n - 1);
    }
    return v < 0 ? 0 : v > (double)(n - 1) ? (double)(n - 1) : v;
}

/* Keys' cubic weights of the four pixels around a point at fraction t. */
static void cubic_weights(double t, double *w)
{
    const double a = -0.75;
    double d[4] = {t + 1, t, 1 - t, 2 - t};
    for (int k = 0; k < 4; k++) {
        double s = d[k];
        w[k] = s <= 1 ? ((a + 2) * s - (a + 3)) * s * s + 1
                      : ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    }
}

/* The pixels that a point reads along one axis of n pixels and their
 * weights: idx[0..count-1] (outside [0, n - 1] for a zero) and w. */
typedef struct gs_taps {
    int count;
    int64_t idx[4];
    double w[4];
} gs_taps;

/* The taps of pixel coordinate v along an axis of n pixels: the nearest
 * pixel (rounded half to even), the 2 around v (linear) or the 4 around it
 * (cubic). For cubic, padding applies to each tap's coordinate, not to v. */
static void axis_taps(const gridsample *g, double v, int64_t n, gs_taps *t)
{
    if (g->padding == GS_ZEROS) {
        /* Far outside, every pixel read is a zero: the same for any point
         * there (and integer conversions stay in range). */
        v = fmax(-4, fmin(v, (double)n + 4));
    }
    if (g->mode == GS_BICUBIC) {
        double v0 = floor(v);
        t->count = 4;
        cubic_weights(v - v0, t->w);
        for (int j = 0; j < 4; j++) t->idx[j] = (int64_t)pad_coord(g, v0 - 1 + j, n);
        return;
    }
    v = pad_coord(g, v, n);
    if (g->mode == GS_NEAREST) {
        t->count = 1;
        t->idx[0] = (int64_t)nearbyint(v);
        t->w[0] = 1;
        return;
    }
    double v0 = floor(v);
    t->count = 2;
    t->idx[0] = (int64_t)v0;
    t->idx[1] = t->idx[0] + 1;
    t->w[1] = v - v0;
    t->w[0] = 1 - t->w[1];
}

/* The value of one channel plane at the normalised point `at` (x first:
 * at[0] runs along the last axis of X). */
static double sample(const gridsample *g, const double *plane, const double *at)
{
    gs_taps taps[GS_MAX_AXES];
    for (int32_t i = 0; i < g->r; i++) {
        double v = unnormalize(g, at[g->r - 1 - i], g->in[i]);
        if (!isfinite(v)) return 0;
        axis_taps(g, v, g->in[i], &taps[i]);
    }
    /* Every combination of one tap per axis, the last axis fastest. */
    int j[GS_MAX_AXES] = {0};
    double acc = 0;
    for (;;) {
        double weight = 1;
        int64_t flat = 0;
        int inside = 1;
        for (int32_t i = 0; i < g->r; i++) {
            int64_t k = taps[i].idx[j[i]];
            weight *= taps[i].w[j[i]];
            inside = inside && k >= 0 && k < g->in[i];
            flat = flat * g->in[i] + k;
        }
        if (inside) acc += weight * plane[flat];
        int32_t i = g->r - 1;
        while (i >= 0 && ++j[i] == taps[i].count) j[i--] = 0;
        if (i < 0) return acc;
    }
}

static d5_status gridsample_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gridsample *g = state;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t c = 0; c < g->channels; c++) {
            const double *plane = in[0].data + (n * g->channels + c) * g->in_size;
            const double *grid = in[1].data + n * g->points * g->r;
            double *y = out[0].data + (n * g->channels + c) * g->points;
            for (int64_t p = 0; p < g->points; p++) y[p] = sample(g, plane, grid + g->r * p);
        }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* About two operations per pixel read (linear: 2^r of them) and three for
 * cubic (4^r): 8 and 48 for an image. */
static double gridsample_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *out = shapes->outputs;
    const gridsample *g = state;
    double per = 1;
    for (int32_t i = 0; i < g->r; i++)
        per *= g->mode == GS_BICUBIC ? 4 : g->mode == GS_BILINEAR ? 2 : 1;
    per *= g->mode == GS_BICUBIC ? 3 : g->mode == GS_BILINEAR ? 2 : 1;
    return per * (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR_NO_BACKWARD(GridSample, 2, 2, 1, 1, gridsample_create, gridsample_forward, NULL,
                            gridsample_flops);
