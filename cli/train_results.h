/* What d5 train prints and writes about a finished run: the epochs table,
 * the stop, the backends and threads, the regions, and the training
 * document of --json and train.json. */
#ifndef D5_CLI_TRAIN_RESULTS_H
#define D5_CLI_TRAIN_RESULTS_H

#include "train_dist.h"
#include "train_out.h"

#include <jansson.h>
#include <stdio.h>

/* What the end of a run prints: the epochs, the stop, backends, threads, the
 * distributed figures and the regions. */
typedef struct train_report {
    const d5_train_result *res;
    double target;
    const char *backend;
    job *jb;
    const char *sampler;
    int batch;
    int64_t local_batch;
    d5_timer *timer;
    const train_reports *reports;
    const train_precision *prec;
} train_report;

/* The report of the run (borrowed); the status of the regions' table. */
d5_status train_print_report(FILE *f, const train_report *rp);
/* summary.txt of --out: the options' echo, `header` and the report as the
 * run printed them, with the float32 baseline's lines; *text (caller frees
 * with free, also on failure) holds *len bytes. */
d5_status train_summary(const cli_spec *spec, const char *header, const train_report *rp,
                        char **text, size_t *len);
/* "target accuracy reached", "time budget spent", ...: why the run stopped. */
const char *train_stop_name(int32_t stop);
/* "dnnl 7 nodes, ref 4 nodes": the backends that ran the training graph. */
void train_print_backends(FILE *f, const d5_train_result *r);
/* {"dnnl": 7, "ref": 4}: the same for the JSON file (new reference). */
json_t *train_backends_json(const d5_train_result *r);
/* The statistics of the trainer's regions, in nanoseconds (new reference). */
json_t *train_regions_json(d5_timer *t);
/* The document of --json and train.json (its context block is added as it
 * is written, cli_json_write): config, regions, epochs, the loss and learning
 * rate of every step, the stop; `config`, `regions` and `dist` are taken. */
json_t *train_doc(const d5_train_result *r, json_t *config, json_t *regions, json_t *dist);

#endif
