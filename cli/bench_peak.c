/* d5 bench's peak for %peak and the roofline: of the two all-core FP32 peaks
 * it measures (before and after the suite), the higher. A peak measured
 * beside a busy process reads low and inflates every %peak taken against it;
 * the machine computes no faster than its peak, so the higher median is the
 * better estimate of it. */
#include "cli.h"

#include <math.h>

cli_peak_choice cli_bench_peak(const d5_machine_peaks *before, const d5_machine_peaks *after)
{
    double b = before ? before->fp32_all.median : NAN;
    double a = after ? after->fp32_all.median : NAN;
    int have_b = isfinite(b) && b > 0, have_a = isfinite(a) && a > 0;
    cli_peak_choice c = {0, "none", "no peak was measured"};
    if (have_a && (!have_b || a > b))
        c = (cli_peak_choice){a, "after",
                              have_b && before->contention.contended
                                  ? "the higher of the two; the one before the suite was "
                                    "measured under contention"
                                  : "the higher of the two"};
    else if (have_b)
        c = (cli_peak_choice){b, "before",
                              have_a && after->contention.contended
                                  ? "the higher of the two; the one after the suite was measured "
                                    "under contention"
                              : have_a ? "the higher of the two"
                                       : "the only one measured"};
    return c;
}

d5_status cli_rates_note(cli_rates *rates, size_t index, double gflops)
{
    if (rates->n == CLI_RATES_MAX)
        return d5_error(D5_ERR_RANGE, "more than %d operator benchmarks to rate against the peak",
                        CLI_RATES_MAX);
    rates->index[rates->n] = index;
    rates->gflops[rates->n++] = gflops;
    return D5_OK;
}

d5_status cli_rates_pct_peak(d5_results *r, const cli_rates *rates, double peak_gflops)
{
    d5_status s = D5_OK;
    for (size_t i = 0; s == D5_OK && peak_gflops > 0 && i < rates->n; i++) {
        double pct = 100 * rates->gflops[i] / peak_gflops;
        s = d5_results_counter(r, rates->index[i], "pct_peak", pct, "%");
        /* Above 100% the peak was measured low: never a plain figure. */
        if (s == D5_OK && pct > 100)
            s = d5_results_counter(r, rates->index[i], "peak_under_measured", 1, "flag");
    }
    return s;
}
