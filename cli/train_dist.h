/* d5 train --distributed: the job around the trainer (the communicator, the
 * scheme, the checks every rank makes alike, ending the job on a failure),
 * and the figures of a distributed run, printed and as the JSON block
 * "distributed" (docs/level3.md describes each field). */
#ifndef D5_CLI_TRAIN_DIST_H
#define D5_CLI_TRAIN_DIST_H

#include "cli.h"
#include "d5/d5.h"

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

/* A distributed run of d5 train on this rank. */
typedef struct job {
    d5_comm *comm; /* NULL: not distributed */
    d5_dist *dist;
    d5_dist_params dp;
    const char *comm_name;
    int32_t rank, size, workers;
    int32_t worker; /* 0 .. workers-1; -1 on a server */
    int server;     /* this rank serves parameters */
    int64_t epoch_steps;
    d5_trainer *t;
    d5_sampler *smp;
    d5_dist_result res;
    int finished; /* res holds figures */
} job;

/* The communicator and the checks every rank makes alike before anything
 * starts: -1 to go on, or an exit status; with D5_EXIT_USAGE after the
 * communicator started, rank 0 has said what is wrong with the options
 * before the job ended on every rank. */
int job_begin(job *jb, const d5_dist_params *dp, const char *comm_name, double timeout,
              int32_t sampler, int batch);
/* Every rank's verdict on a check, so that all go on or all stop. */
int job_agree_ok(job *jb, int ok);
/* A worker: the trainer with the distributed sampler and the scheme. */
struct train_reports;
d5_status job_train(job *jb, d5_network *net, const d5_dataset *train, const d5_dataset *test,
                    d5_optimizer *opt, const d5_trainer_params *tp, const d5_sampler_params *sp,
                    d5_timer *timer, d5_train_result *res, struct train_reports *tr);
/* A server rank: a trainer of the same network for its parameters, never run. */
d5_status job_serve(job *jb, d5_network *net, d5_optimizer *opt, const d5_trainer_params *tp);
/* Collective: the scheme's last steps and the figures into jb->res. */
d5_status job_finish(job *jb);
/* The figures, printed on f, or (f NULL) returned as the JSON block. */
json_t *job_report(job *jb, FILE *f, const char *sampler, int batch, int64_t local_batch);
/* The loss curve of a synchronous scheme: the workers' mean per step. */
void job_global_losses(job *jb, d5_train_result *res);
/* Ends the job: frees what it holds (the communicator last: it finalises
 * MPI) and returns rc. */
int job_end(job *jb, int rc);
/* A failure after the job started: a job of several ranks is ended on every
 * rank (MPI_Abort); returns the exit status on a job of one. */
int job_fail(job *jb, d5_status s);

#endif
