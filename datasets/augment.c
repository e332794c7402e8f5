/* Data augmentations of image samples [C, H, W] (or [H, W]), applied in this
 * order: random crop after zero padding, random horizontal flip, per-channel
 * normalization, cutout. All random draws come from the sampler's stream, so a
 * seed reproduces them. Cutout follows DeVries & Taylor, "Improved
 * Regularization of Convolutional Neural Networks with Cutout" (2017): the
 * square's centre is uniform over the image and the square is clipped at its
 * borders; it comes after normalization, so the square is exactly zero. */
#include "dataset_internal.h"

#include <math.h>
#include <string.h>

typedef struct geometry {
    int64_t c, h, w;
} geometry;

/* Channels and image size of a sample; spatial is 0 when it has fewer than
 * 2 or more than 3 dimensions. */
static geometry geometry_of(const d5_tensor_desc *d, int *spatial)
{
    geometry g = {1, 1, 1};
    *spatial = d->ndim == 2 || d->ndim == 3;
    if (d->ndim == 3) g.c = d->shape[0];
    if (d->ndim == 1) g.w = d->shape[0]; /* normalize only: one channel */
    if (*spatial) {
        g.h = d->shape[d->ndim - 2];
        g.w = d->shape[d->ndim - 1];
    }
    return g;
}

int d5__augment_any(const d5_augment *a)
{
    return a->normalize || a->crop_pad > 0 || a->flip || a->cutout > 0;
}

d5_status d5__augment_check(const d5_augment *a, const d5_tensor_desc *sample)
{
    int spatial = 0;
    geometry g = geometry_of(sample, &spatial);
    char shape[160];
    d5_tensor_desc_format(sample, shape, sizeof shape);
    if (a->crop_pad < 0 || a->cutout < 0)
        return d5_error(D5_ERR_INVALID, "augment: crop_pad %d and cutout %d must not be negative",
                        (int)a->crop_pad, (int)a->cutout);
    if ((a->crop_pad > 0 || a->flip || a->cutout > 0) && !spatial)
        return d5_error(D5_ERR_INVALID,
                        "augment: crop, flip and cutout need samples [C, H, W] or [H, W], not %s",
                        shape);
    if (a->normalize) {
        if (sample->ndim > 3 || g.c > 4)
            return d5_error(D5_ERR_INVALID,
                            "augment: normalize handles at most 4 channels [C, H, W]; samples "
                            "are %s",
                            shape);
        for (int64_t c = 0; c < g.c; c++)
            if (!(a->std[c] != 0.0f) || !isfinite(a->std[c]) || !isfinite(a->mean[c]))
                return d5_error(D5_ERR_INVALID,
                                "augment: normalize channel %lld has mean %g and std %g; the std "
                                "must be finite and non-zero",
                                (long long)c, (double)a->mean[c], (double)a->std[c]);
    }
    return D5_OK;
}

/* Shifts the padded image by (dy, dx) in [0, 2 * pad] and cuts out the
 * original size: output (y, x) is input (y + dy - pad, x + dx - pad), zero
 * outside the input. */
static void crop(geometry g, int64_t pad, d5_rng *r, float *x, float *scratch)
{
    int64_t dy = (int64_t)d5_rng_below(r, (uint64_t)(2 * pad + 1)) - pad;
    int64_t dx = (int64_t)d5_rng_below(r, (uint64_t)(2 * pad + 1)) - pad;
    memcpy(scratch, x, (size_t)(g.c * g.h * g.w) * sizeof *x);
    for (int64_t c = 0; c < g.c; c++) {
        const float *src = scratch + c * g.h * g.w;
        float *dst = x + c * g.h * g.w;
        for (int64_t y = 0; y < g.h; y++) {
            int64_t sy = y + dy;
            for (int64_t i = 0; i < g.w; i++) {
                int64_t sx = i + dx;
                int inside = sy >= 0 && sy < g.h && sx >= 0 && sx < g.w;
                dst[y * g.w + i] = inside ? src[sy * g.w + sx] : 0.0f;
            }
        }
    }
}

static void flip(geometry g, float *x)
{
    for (int64_t row = 0; row < g.c * g.h; row++) {
        float *p = x + row * g.w;
        for (int64_t i = 0, j = g.w - 1; i < j; i++, j--) {
            float t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}

static void normalize(const d5_augment *a, geometry g, float *x)
{
    const int64_t plane = g.h * g.w;
    for (int64_t c = 0; c < g.c; c++)
        for (int64_t k = 0; k < plane; k++)
            x[c * plane + k] = (x[c * plane + k] - a->mean[c]) / a->std[c];
}

static void cutout(geometry g, int64_t side, d5_rng *r, float *x)
{
    int64_t cy = (int64_t)d5_rng_below(r, (uint64_t)g.h);
    int64_t cx = (int64_t)d5_rng_below(r, (uint64_t)g.w);
    int64_t y0 = cy - side / 2, x0 = cx - side / 2;
    int64_t y1 = y0 + side, x1 = x0 + side;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    if (y1 > g.h) y1 = g.h;
    if (x1 > g.w) x1 = g.w;
    for (int64_t c = 0; c < g.c; c++)
        for (int64_t y = y0; y < y1; y++)
            for (int64_t i = x0; i < x1; i++) x[(c * g.h + y) * g.w + i] = 0.0f;
}

void d5__augment_apply(const d5_augment *a, const d5_tensor_desc *sample, d5_rng *r, float *x,
                       float *scratch)
{
    int spatial = 0;
    geometry g = geometry_of(sample, &spatial);
    if (a->crop_pad > 0) crop(g, a->crop_pad, r, x, scratch);
    if (a->flip && d5_rng_below(r, 2)) flip(g, x);
    if (a->normalize) normalize(a, g, x);
    if (a->cutout > 0) cutout(g, a->cutout, r, x);
}
