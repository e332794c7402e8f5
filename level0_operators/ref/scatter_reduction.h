/* The reduction attribute of ScatterElements and ScatterND: how an update
 * meets the value already at its position. */
#ifndef D5_REF_SCATTER_REDUCTION_H
#define D5_REF_SCATTER_REDUCTION_H

#include "util.h"

#include <math.h>
#include <string.h>

typedef enum d5_scatter_reduction {
    D5_SCATTER_NONE,
    D5_SCATTER_ADD,
    D5_SCATTER_MUL,
    D5_SCATTER_MAX,
    D5_SCATTER_MIN
} d5_scatter_reduction;

static const char *const d5__scatter_reduction_names[] = {"none", "add", "mul", "max", "min"};

/* Reads the attribute "reduction" (default "none") of operator `op`. */
static inline d5_status d5__scatter_reduction(const char *op, const d5_attrs *attrs,
                                              d5_scatter_reduction *out)
{
    const char *r;
    d5_status s = d5_attrs_string(attrs, "reduction", "none", &r);
    if (s != D5_OK) return s;
    for (int k = D5_SCATTER_NONE; k <= D5_SCATTER_MIN; k++)
        if (strcmp(r, d5__scatter_reduction_names[k]) == 0) {
            *out = (d5_scatter_reduction)k;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "%s: reduction '%s' is not none, add, mul, max or min", op, r);
}

/* D5_OK when the reduction has a gradient here (none and add), else
 * D5_ERR_UNSUPPORTED naming operator `op`. */
static inline d5_status d5__scatter_gradient(const char *op, d5_scatter_reduction r)
{
    if (r == D5_SCATTER_NONE || r == D5_SCATTER_ADD) return D5_OK;
    return d5_error(D5_ERR_UNSUPPORTED,
                    "%s (ref): no gradient for reduction '%s' (only none and add)", op,
                    d5__scatter_reduction_names[r]);
}

/* The backward of ScatterElements and ScatterND reads winner[k]: 1 + the
 * update that wrote data element k last, or 0 where none did (what their
 * forward run records). 1 when the output gradient at element k flows to
 * update u - 1, or for u = 0 to the data: always for "add", only to the one
 * that wrote last for "none". */
static inline int d5__scatter_passes(d5_scatter_reduction r, const int64_t *winner, int64_t k,
                                     int64_t u)
{
    return r == D5_SCATTER_ADD || winner[k] == u;
}

/* The data's gradient (gin[0], when wanted) of a scatter over n elements:
 * the output gradient where no update overwrote the element, or everywhere
 * for "add". */
static inline void d5__scatter_data_grad(d5_scatter_reduction r, const int64_t *winner, int64_t n,
                                         const d5_rt *gout, d5_rt *gin)
{
    if (gin[0].data)
        for (int64_t k = 0; k < n; k++)
            if (d5__scatter_passes(r, winner, k, 0)) gin[0].data[k] += gout[0].data[k];
}

/* The value at a position after update u meets old: u replaces it (none),
 * is added or multiplied in, or the larger / smaller stays (NaN stays). */
static inline double d5__scatter_combine(d5_scatter_reduction r, double old, double u)
{
    switch (r) {
    case D5_SCATTER_ADD: return old + u;
    case D5_SCATTER_MUL: return old * u;
    case D5_SCATTER_MAX: return isnan(old) || old >= u ? old : u;
    case D5_SCATTER_MIN: return isnan(old) || old <= u ? old : u;
    default: return u;
    }
}

#endif
