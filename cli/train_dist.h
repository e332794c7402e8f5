/* d5 train --distributed: the figures of a distributed run, printed and as
 * the JSON block "distributed" (docs/level3.md describes each field). */
#ifndef D5_CLI_TRAIN_DIST_H
#define D5_CLI_TRAIN_DIST_H

#include "d5/distributed.h"

#include <jansson.h>
#include <stdio.h>

typedef struct train_dist_report {
    const d5_dist_result *r;
    const char *comm, *sampler;
    int64_t global_batch, local_batch; /* samples per step of all workers, of one */
    int oversubscribed;
    const char *why;         /* "4 ranks on this node, 2 online CPUs" */
    int32_t staleness_bound; /* ssp; -1 otherwise */
    double bucket_mb;        /* dsgd; -1 otherwise */
} train_dist_report;

/* The block after the epochs table. */
void train_dist_print(FILE *f, const train_dist_report *rep);
/* The JSON object (new reference; NULL when out of memory). */
json_t *train_dist_json(const train_dist_report *rep);

#endif
