/* The inside of a benchmark set, shared by compare.c and compare_read.c. */
#ifndef D5_CORE_COMPARE_SET_H
#define D5_CORE_COMPARE_SET_H

#include "d5/compare.h"

typedef struct d5__bench {
    char *name, *error;
    double *samples; /* ns */
    size_t n, cap;
    double median, ci_low, ci_high; /* ns; NaN when unknown */
    const char *source;             /* static text, see d5_bench_entry */
    int median_entry;               /* the file had a median aggregate for it */
    int d5_block;                   /* ... with a "d5" block */
    size_t d5_n;                    /* the n of that block's statistics */
} d5__bench;

struct d5_bench_set {
    char *label;
    const char *format; /* static text */
    d5__bench *b;
    size_t n, cap;
    size_t last; /* the last benchmark found: entries of one benchmark come together */
};

/* The benchmark named `name`, or NULL. */
d5__bench *d5__bench_set_find(d5_bench_set *set, const char *name);
/* Appends a benchmark without samples (median and CI NaN). */
d5_status d5__bench_set_new(d5_bench_set *set, const char *name, d5__bench **out);
/* Appends one sample. */
d5_status d5__bench_push(d5__bench *b, double v);
/* Median and CI from the samples (nothing when there are none). */
d5_status d5__bench_summarise(d5__bench *b);

#endif
