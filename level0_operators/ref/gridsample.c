/* GridSample (ONNX opset 16; opset 20's mode names "linear" and "cubic" are
 * taken as "bilinear" and "bicubic"): Y[n, c, i, j] samples X [N, C, H, W]
 * (any numeric type) at the point grid[n, i, j] = (x, y) of the floating-point
 * grid [N, Ho, Wo, 2], normalised to [-1, 1] (x along W, y along H). Y is
 * [N, C, Ho, Wo] of X's type.
 *
 * A normalised coordinate g becomes the pixel coordinate ((g + 1) / 2) *
 * (size - 1) with align_corners=1 and ((g + 1) * size - 1) / 2 with 0 (the
 * default), as torch.nn.functional.grid_sample does. mode "bilinear" (the
 * default) blends the 2 x 2 pixels around the point, "nearest" takes the pixel
 * at the coordinates rounded half to even, "bicubic" blends the 4 x 4 pixels
 * around it with Keys' weights for a = -0.75. padding_mode says what lies
 * outside the image: "zeros" (default) reads 0 there; "border" clamps the
 * coordinate to [0, size - 1]; "reflection" reflects it about the borders
 * (the pixel centres 0 and size - 1 with align_corners=1, else -0.5 and
 * size - 0.5) and clamps. For bicubic, padding applies to each of the 16
 * pixels read, not to the point. No gradient.
 * https://onnx.ai/onnx/operators/onnx__GridSample.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef enum { GS_BILINEAR, GS_NEAREST, GS_BICUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_padding;

typedef struct gridsample {
    gs_mode mode;
    gs_padding padding;
    int align_corners;
    d5_nchw x; /* X's sizes */
    int64_t ho, wo;
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
    if (x->ndim != 4)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "GridSample: input 0 (X) has %d dims, expected 4 ([N, C, H, W]; the ref "
                        "backend samples 2-d images)",
                        (int)x->ndim);
    if (grid->ndim != 4 || grid->shape[0] != x->shape[0] || grid->shape[3] != 2) {
        char got[96];
        d5__shape_str(grid, got, sizeof got);
        return d5_error(D5_ERR_SHAPE,
                        "GridSample: input 1 (grid) has shape %s, expected [%lld, Ho, Wo, 2]", got,
                        (long long)x->shape[0]);
    }
    if (align != 0 && align != 1)
        return d5_error(D5_ERR_INVALID, "GridSample: align_corners is %lld, expected 0 or 1",
                        (long long)align);
    g.align_corners = (int)align;
    g.x = d5__nchw(x);
    g.ho = grid->shape[1];
    g.wo = grid->shape[2];
    out[0] = *x;
    out[0].shape[2] = g.ho;
    out[0].shape[3] = g.wo;
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

/* Pixel (y, x) of one channel plane, 0 outside the image. */
static double pixel(const gridsample *g, const double *plane, int64_t y, int64_t x)
{
    if (y < 0 || y >= g->x.h || x < 0 || x >= g->x.w) return 0;
    return plane[y * g->x.w + x];
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

/* Pixel (y, x) of a bicubic tap: padding applies to the tap's coordinates. */
static double cubic_pixel(const gridsample *g, const double *plane, double y, double x)
{
    y = pad_coord(g, y, g->x.h);
    x = pad_coord(g, x, g->x.w);
    return pixel(g, plane, (int64_t)y, (int64_t)x);
}

static double sample(const gridsample *g, const double *plane, double gx, double gy)
{
    double x = unnormalize(g, gx, g->x.w), y = unnormalize(g, gy, g->x.h);
    if (!isfinite(x) || !isfinite(y)) return 0;
    if (g->padding == GS_ZEROS) {
        /* Far outside, every pixel read is a zero: the same for any point
         * there (and integer conversions stay in range). */
        x = fmax(-4, fmin(x, (double)g->x.w + 4));
        y = fmax(-4, fmin(y, (double)g->x.h + 4));
    }
    if (g->mode == GS_BICUBIC) {
        double x0 = floor(x), y0 = floor(y), wx[4], wy[4], acc = 0;
        cubic_weights(x - x0, wx);
        cubic_weights(y - y0, wy);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                acc += wy[i] * wx[j] * cubic_pixel(g, plane, y0 - 1 + i, x0 - 1 + j);
        return acc;
    }
    x = pad_coord(g, x, g->x.w);
    y = pad_coord(g, y, g->x.h);
    if (g->mode == GS_NEAREST) return pixel(g, plane, (int64_t)nearbyint(y), (int64_t)nearbyint(x));
    double x0 = floor(x), y0 = floor(y), fx = x - x0, fy = y - y0;
    int64_t ix = (int64_t)x0, iy = (int64_t)y0;
    return (1 - fy) * ((1 - fx) * pixel(g, plane, iy, ix) + fx * pixel(g, plane, iy, ix + 1)) +
           fy * ((1 - fx) * pixel(g, plane, iy + 1, ix) + fx * pixel(g, plane, iy + 1, ix + 1));
}

static d5_status gridsample_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gridsample *g = state;
    int64_t points = g->ho * g->wo;
    for (int64_t n = 0; n < g->x.n; n++)
        for (int64_t c = 0; c < g->x.c; c++) {
            const double *plane = in[0].data + (n * g->x.c + c) * g->x.h * g->x.w;
            const double *grid = in[1].data + n * points * 2;
            double *y = out[0].data + (n * g->x.c + c) * points;
            for (int64_t p = 0; p < points; p++)
                y[p] = sample(g, plane, grid[2 * p], grid[2 * p + 1]);
        }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* Bilinear: about 8 operations per output element; bicubic about 48. */
static double gridsample_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *out = shapes->outputs;
    const gridsample *g = state;
    double per = g->mode == GS_BICUBIC ? 48 : g->mode == GS_BILINEAR ? 8 : 1;
    return per * (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR_NO_BACKWARD(GridSample, 2, 2, 1, 1, gridsample_create, gridsample_forward, NULL,
                            gridsample_flops);
