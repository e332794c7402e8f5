/* d5 scaling --simulate: the rows of rank counts beyond the machine with
 * their allreduce simulated by SimGrid: d5-sim-allreduce (the communicator
 * built with smpicc, beside the d5 binary) under smpirun, on a platform file
 * and a hostfile, once per rank count. */
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
    snprintf(out->program, sizeof out->program, "%.*sd5-sim-allreduce",
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

void scaling_sim_words(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks, double bytes,
                       scaling_words *w)
{
    char buf[64];
    scaling_words_add(w, "smpirun");
    scaling_words_add(w, "-np");
    snprintf(buf, sizeof buf, "%lld", (long long)ranks);
    scaling_words_add(w, buf);
    scaling_words_add(w, "-platform");
    scaling_words_add(w, sim->platform);
    scaling_words_add(w, "-hostfile");
    scaling_words_add(w, sim->hostfile);
    scaling_words_add(w, "--cfg=smpi/host-speed:1Gf");
    scaling_words_add(w, "--cfg=smpi/shared-malloc-blocksize:134217728");
    scaling_words_add(w, "--cfg=smpi/display-timing:no");
    scaling_words_add(w, "--log=root.thres:warning");
    int model = fit && fit->piecewise && fit->reduce.beta_s_per_byte > 0;
    /* With a fitted sum the arithmetic is not timed: the model stands for it. */
    if (model) scaling_words_add(w, "--cfg=smpi/simulate-computation:no");
    scaling_words_add(w, sim->program);
    scaling_words_add(w, "--comm");
    scaling_words_add(w, "ring");
    snprintf(buf, sizeof buf, "%.0f", bytes);
    scaling_words_add(w, "-b");
    scaling_words_add(w, buf);
    scaling_words_add(w, "-e");
    scaling_words_add(w, buf);
    scaling_words_add(w, "--reps");
    scaling_words_add(w, "1");
    if (model) {
        snprintf(buf, sizeof buf, "%.6g", fit->reduce.beta_s_per_byte);
        scaling_words_add(w, "--reduce-s-per-byte");
        scaling_words_add(w, buf);
        snprintf(buf, sizeof buf, "%.6g", fmax(fit->reduce.alpha_s, 0));
        scaling_words_add(w, "--reduce-alpha-s");
        scaling_words_add(w, buf);
    }
}

int scaling_sim_allreduce(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks,
                          double bytes, const char *log, double *comm_s)
{
    *comm_s = NAN;
    scaling_words w = {0};
    scaling_sim_words(sim, fit, ranks, bytes, &w);
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
    /* The row of the size: "  BYTES  TIME_US  ALGBW  BUSBW". */
    FILE *f = fopen(log, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        double b, t;
        if (line[0] != '#' && sscanf(line, "%lf %lf", &b, &t) == 2 && b == bytes)
            *comm_s = t * 1e-6;
    }
    if (f) fclose(f);
    if (!(*comm_s >= 0)) {
        fprintf(stderr, "d5 scaling: the simulation of %lld ranks gave no time for %.0f bytes\n",
                (long long)ranks, bytes);
        scaling_print_tail(log, 15);
        return D5_EXIT_CHECK;
    }
    return 0;
}
