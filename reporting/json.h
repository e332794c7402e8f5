/* jansson helpers shared by the JSON writers of reporting/. jansson stays inside this library. */
#ifndef D5_REPORTING_JSON_H
#define D5_REPORTING_JSON_H

#include "d5/core.h"
#include "d5/stats.h"

#include <jansson.h>

/* The context block of every d5 JSON document: Google Benchmark's fields
 * (date, host_name, executable, num_cpus, mhz_per_cpu, caches, load_avg,
 * library_build_type, json_schema_version) plus a "d5" build block. NULL when
 * out of memory. */
json_t *d5__json_context(void);
/* The statistics as an object with fields named as in d5_stats. */
json_t *d5__json_stats(const d5_stats *s);
/* A number array. */
json_t *d5__json_array(const double *x, size_t n);
/* Dumps `doc` to `path` atomically (steals the reference). */
d5_status d5__json_write(json_t *doc, const char *path, size_t flags);
/* Appends a new object/value, treating NULL (out of memory) as failure. */
int d5__json_set(json_t *obj, const char *key, json_t *value);

#endif
