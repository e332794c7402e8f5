/* d5 scaling --simulate: the rows of rank counts beyond the machine
 * simulated by SimGrid: d5-sim-train (level 3's schemes and communicator
 * built with smpicc, beside the d5 binary) replays the step profile of a
 * real run on P simulated ranks under smpirun, on a platform file and a
 * hostfile, once per rank count. */
#define _POSIX_C_SOURCE 200809L
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int scaling_sim_check(const char *d5, const char *platform, const char *hostfile, scaling_sim *out)
{
    memset(out, 0, sizeof *out);
    out->platform = platform;
    out->hostfile = hostfile;
    if (!hostfile) {
        fprintf(stderr, "d5 scaling: --simulate needs --sim-hostfile FILE: the hosts of the "
                        "platform the ranks run on, one a line, in rank order\n");
        return D5_EXIT_USAGE;
    }
    const char *files[2] = {platform, hostfile}, *flags[2] = {"--simulate", "--sim-hostfile"};
    for (int i = 0; i < 2; i++)
        if (access(files[i], R_OK) != 0) {
            fprintf(stderr, "d5 scaling: %s %s: cannot read the file\n", flags[i], files[i]);
            return D5_EXIT_INPUT;
        }
    const char *slash = strrchr(d5, '/');
    snprintf(out->program, sizeof out->program, "%.*sd5-sim-train",
             slash ? (int)(slash - d5 + 1) : 0, d5);
    if (access(out->program, X_OK) != 0) {
        fprintf(stderr,
                "d5 scaling: --simulate: no %s (it is built beside d5 where SimGrid's smpicc, "
                "libsimgrid-dev, is found)\n",
                out->program);
        return D5_EXIT_INPUT;
    }
    if (!scaling_on_path("smpirun")) {
        fprintf(stderr, "d5 scaling: --simulate: no smpirun on PATH (libsimgrid-dev)\n");
        return D5_EXIT_INPUT;
    }
    return 0;
}

/* The scheme's options of the train command, passed on to d5-sim-train. */
static void scheme_options(const scaling_plan *pl, scaling_words *w)
{
    for (int i = 0; pl && i < pl->ntrain; i++) {
        const char *a = pl->train[i];
        /* The parameter hash is not computed on folded buffers. */
        if (!scaling_scheme_option(a) || strncmp(a, "--hash-every", 12) == 0) continue;
        scaling_words_add(w, a);
        if (!strchr(a, '=') && i + 1 < pl->ntrain) scaling_words_add(w, pl->train[++i]);
    }
}

void scaling_sim_words(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks,
                       const scaling_replay *rp, scaling_words *w)
{
    char buf[64];
    const char *head[] = {"smpirun",
                          "-np",
                          NULL,
                          "-platform",
                          sim->platform,
                          "-hostfile",
                          sim->hostfile,
                          "--cfg=smpi/host-speed:1Gf",
                          "--cfg=smpi/shared-malloc-blocksize:134217728",
                          "--cfg=smpi/simulate-computation:no",
                          "--cfg=smpi/test:0",
                          "--cfg=smpi/iprobe:1e-6",
                          "--cfg=smpi/display-timing:no",
                          "--log=root.thres:warning",
                          sim->program,
                          "--profile",
                          rp->profile,
                          "--scheme",
                          rp->scheme,
                          "--comm",
                          rp->comm};
    snprintf(buf, sizeof buf, "%lld", (long long)ranks);
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++)
        scaling_words_add(w, head[k] ? head[k] : buf);
    scheme_options(rp->pl, w);
    scaling_words_add(w, "--steps");
    snprintf(buf, sizeof buf, "%lld", (long long)rp->steps);
    scaling_words_add(w, buf);
    if (rp->time_scale != 1) {
        scaling_words_add(w, "--time-scale");
        snprintf(buf, sizeof buf, "%.9g", rp->time_scale);
        scaling_words_add(w, buf);
    }
    if (fit && fit->piecewise && fit->reduce.beta_s_per_byte > 0) {
        scaling_words_add(w, "--sum-s-per-byte");
        snprintf(buf, sizeof buf, "%.6g", fit->reduce.beta_s_per_byte);
        scaling_words_add(w, buf);
    }
}

/* "NAME   12.345 ms  [12.000, 12.500]" of d5-sim-train. */
static int read_figure(const char *line, const char *name, scaling_stat *st)
{
    char key[32];
    double m, lo, hi;
    if (sscanf(line, "%31s %lf ms [%lf, %lf]", key, &m, &lo, &hi) != 4 || strcmp(key, name) != 0)
        return 0;
    *st = (scaling_stat){m * 1e-3, lo * 1e-3, hi * 1e-3};
    return 1;
}

int scaling_sim_train(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks,
                      const scaling_replay *rp, const char *log, scaling_row *row)
{
    scaling_words w = {0};
    scaling_sim_words(sim, fit, ranks, rp, &w);
    if (w.failed) {
        scaling_words_free(&w);
        return cli_fail("scaling", d5_error(D5_ERR_NOMEM, "out of memory"));
    }
    int rc = scaling_run_logged(w.v, log);
    scaling_words_free(&w);
    if (rc != 0) {
        fprintf(stderr, "d5 scaling: the simulation of %lld ranks ended with exit status %d\n",
                (long long)ranks, rc);
        scaling_print_tail(log, 15);
        return D5_EXIT_CHECK;
    }
    FILE *f = fopen(log, "r");
    char line[512];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) {
        found |= read_figure(line, "step", &row->step);
        found |= read_figure(line, "compute", &row->compute) << 1;
        found |= read_figure(line, "exposed", &row->comm) << 2;
    }
    if (f) fclose(f);
    if (found != 7) {
        fprintf(stderr,
                "d5 scaling: the simulation of %lld ranks printed no step, compute and exposed "
                "times\n",
                (long long)ranks);
        scaling_print_tail(log, 15);
        return D5_EXIT_CHECK;
    }
    return 0;
}
