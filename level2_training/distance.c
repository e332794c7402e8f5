/* The distance between two parameter sets, to follow how far two training
 * runs (two frameworks, two backends, two seeds) drift apart step by step. */
#include "d5/training.h"

#include <math.h>

void d5_param_distance(const float *a, const float *b, int64_t n, double *l2, double *linf)
{
    double sum = 0, max = 0;
    int nan = 0;
    if (a && b)
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)a[i] - (double)b[i]);
            sum += d * d;
            if (isnan(d))
                nan = 1;
            else if (d > max)
                max = d;
        }
    /* A NaN difference makes both norms NaN, so that a run that diverged is
     * never reported as close to another. */
    if (l2) *l2 = sqrt(sum);
    if (linf) *linf = nan ? (double)NAN : max;
}
