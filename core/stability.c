/* Is a median worth reporting? Modes of the samples' distribution, found on a
 * kernel density estimate, and the width of the median's confidence interval. */
#include "d5/stats.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GRID 256

/* Density of the sorted samples inside [lo, hi] on GRID points: the samples
 * are binned, then the bins are smoothed with a Gaussian kernel of width h. */
static void density(const double *sorted, size_t n, double lo, double hi, double h, double *d)
{
    double bins[GRID] = {0};
    double step = (hi - lo) / (GRID - 1);
    for (size_t i = 0; i < n; i++) {
        if (sorted[i] < lo || sorted[i] > hi) continue;
        size_t b = (size_t)((sorted[i] - lo) / step + 0.5);
        bins[b < GRID ? b : GRID - 1] += 1;
    }
    double hb = h / step; /* the kernel's width in bins */
    int reach = (int)ceil(4 * hb);
    if (reach > GRID) reach = GRID;
    for (int g = 0; g < GRID; g++) {
        double sum = 0;
        int from = g - reach < 0 ? 0 : g - reach, to = g + reach >= GRID ? GRID - 1 : g + reach;
        for (int b = from; b <= to; b++) {
            if (bins[b] == 0) continue;
            double u = (double)(g - b) / hb;
            sum += bins[b] * exp(-0.5 * u * u);
        }
        d[g] = sum;
    }
}

int32_t d5_stats_modes(const double *x, size_t n)
{
    if (!x || n < D5_STATS_MODES_MIN_N) return 0;
    double *s = d5_alloc(n * sizeof *s, "mode search");
    if (!s) return 0;
    memcpy(s, x, n * sizeof *s);
    d5__sort_doubles(s, n);
    /* The outer 1% on each side is left out, so that a few outliers do not
     * stretch the grid until the bulk of the samples falls into one point. */
    double lo = d5_stats_quantile_sorted(s, n, 0.01), hi = d5_stats_quantile_sorted(s, n, 0.99);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++) mean += s[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) var += (s[i] - mean) * (s[i] - mean);
    double sd = sqrt(var / (double)(n - 1));
    double iqr = d5_stats_quantile_sorted(s, n, 0.75) - d5_stats_quantile_sorted(s, n, 0.25);
    /* Silverman's rule of thumb; it over-smooths a multimodal sample, so a
     * mode that survives it is a real one. */
    double spread = iqr > 0 && iqr / 1.34 < sd ? iqr / 1.34 : sd;
    double h = 0.9 * spread * pow((double)n, -0.2);
    /* Quantised samples (a coarse clock, GPU events) put spikes at multiples
     * of the quantum: a kernel at least 0.6 quanta wide merges neighbouring
     * spikes, so that quantisation is not taken for modes. */
    double quantum = INFINITY;
    for (size_t i = 1; i < n; i++)
        if (s[i] > s[i - 1] && s[i] - s[i - 1] < quantum) quantum = s[i] - s[i - 1];
    if (isfinite(quantum) && h < 0.6 * quantum) h = 0.6 * quantum;
    if (!(hi > lo) || !(h > 0)) {
        d5_free(s);
        return 1;
    }
    double d[GRID];
    density(s, n, lo - 3 * h, hi + 3 * h, h, d);
    d5_free(s);

    /* Peaks above 10% of the highest; two neighbouring peaks are distinct
     * when the valley between them falls below 60% of the lower one. */
    double top = 0;
    for (int g = 0; g < GRID; g++) top = d[g] > top ? d[g] : top;
    int32_t modes = 0;
    double last_peak = 0, valley = INFINITY; /* valley: the lowest point since last_peak */
    for (int g = 1; g < GRID - 1; g++) {
        valley = d[g] < valley ? d[g] : valley;
        int peak = d[g] >= d[g - 1] && d[g] > d[g + 1];
        if (!peak || d[g] < 0.1 * top) continue;
        if (modes == 0 || valley < 0.6 * fmin(last_peak, d[g])) {
            modes++;
            last_peak = d[g];
            valley = INFINITY;
        } else if (d[g] > last_peak) {
            last_peak = d[g]; /* the same mode, higher */
            valley = INFINITY;
        }
    }
    return modes ? modes : 1;
}

d5_status d5_stability_check(const double *x, size_t n, const d5_stats *st, d5_stability *out)
{
    if (!x || !st || !out) return d5_error(D5_ERR_INVALID, "d5_stability_check: NULL argument");
    memset(out, 0, sizeof *out);
    double hw = fmax(st->median - st->ci_low, st->ci_high - st->median);
    out->rel_ci = st->median != 0 ? hw / fabs(st->median) : (hw == 0 ? 0 : INFINITY);
    out->modes = d5_stats_modes(x, n);
    if (out->modes >= 2) {
        out->unstable = 1;
        snprintf(out->reason, sizeof out->reason, "%d modes in %zu samples", (int)out->modes, n);
    } else if (out->rel_ci > D5_STABLE_MAX_REL_CI) {
        out->unstable = 1;
        snprintf(out->reason, sizeof out->reason, "median's CI is +-%.0f%% of it",
                 100 * out->rel_ci);
    }
    return D5_OK;
}
