/* d5 scaling: a scaling series of distributed training. For each rank count P
 * it runs `d5 train --distributed ...` under a launcher (mpirun -n P by
 * default), reads the run's JSON and prints throughput, speedup, efficiency
 * and the share of exposed communication. With --model-ranks, rank counts
 * beyond the machine are modelled from the measured compute time and an
 * alpha-beta fit, and labelled as modelled. How the runs start:
 * scaling_launch.c; rows, tables and files: scaling.c. */
#define _POSIX_C_SOURCE 200809L
#include "output_options.h"
#include "scaling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the series needs between its steps. */
typedef struct series {
    const scaling_plan *pl;
    char dir[4096], json[4200], log[4200], pp_json[4200], profile[4200];
    int steps, step;
} series;

/* One measured run: its row, or an exit status after saying what failed. */
static int measure(series *se, int64_t p, scaling_row *row)
{
    scaling_words w = {0};
    unlink(se->json);
    scaling_train_words(se->pl, p, se->json, &w);
    if (w.failed) {
        scaling_words_free(&w);
        return cli_fail("scaling", d5_error(D5_ERR_NOMEM, "out of memory"));
    }
    fprintf(stderr, "[%d/%d] ranks %lld: ", ++se->step, se->steps, (long long)p);
    scaling_print_words(stderr, "", &w);
    fputc('\n', stderr);
    int rc = scaling_run_logged(w.v, se->log);
    if (rc != 0) {
        fprintf(stderr, "d5 scaling: ranks %lld: the run ended with exit status %d\n", (long long)p,
                rc);
        scaling_print_tail(se->log, 25);
    } else if (scaling_row_read(se->json, row) != D5_OK) {
        fprintf(stderr, "d5 scaling: ranks %lld: %s\n", (long long)p, d5_last_error());
        scaling_print_tail(se->log, 10);
        rc = D5_EXIT_INPUT;
    } else if (row->ranks != p) {
        fprintf(stderr,
                "d5 scaling: ranks %lld: d5 train ran on %lld rank%s: the launcher did not start "
                "%lld (does --launcher put {n} where the rank count goes?)\n",
                (long long)p, (long long)row->ranks, row->ranks == 1 ? "" : "s", (long long)p);
        rc = D5_EXIT_CHECK;
    }
    scaling_words_free(&w);
    return rc;
}

/* alpha and beta measured now: d5 pingpong --fit on 2 ranks. */
static int measure_fit(series *se, scaling_fit *fit, char *source, size_t size)
{
    scaling_words w = {0};
    scaling_pingpong_words(se->pl, se->pp_json, &w);
    fprintf(stderr, "[%d/%d] alpha-beta fit: ", ++se->step, se->steps);
    scaling_print_words(stderr, "", &w);
    fputc('\n', stderr);
    int rc = w.failed ? D5_EXIT_CHECK : scaling_run_logged(w.v, se->log);
    if (rc != 0) {
        fprintf(stderr,
                "d5 scaling: the alpha-beta fit (d5 pingpong --fit) ended with exit "
                "status %d: no modelled rows\n",
                rc);
        scaling_print_tail(se->log, 25);
    } else if (scaling_fit_read(se->pp_json, fit) != D5_OK) {
        fprintf(stderr, "d5 scaling: %s\n", d5_last_error());
        rc = D5_EXIT_INPUT;
    }
    size_t used = (size_t)snprintf(source, size, "measured now: ");
    FILE *f = fmemopen(source + used, size - used, "w");
    if (f) {
        /* The command without its temporary --json. */
        scaling_words shown = w;
        shown.n = w.n >= 2 ? w.n - 2 : w.n;
        scaling_print_words(f, "", &shown);
        fclose(f);
    }
    scaling_words_free(&w);
    return rc;
}

/* ---- The series ---- */

typedef struct sc_opts {
    const char *ranks, *mode, *launcher, *model_ranks, *fit, *simulate, *sim_hostfile;
    scaling_sim sim;  /* --simulate's, checked */
    cli_outputs outs; /* --json, --csv */
    int print_only;
} sc_opts;

/* The simulated rows: the reference run once more as the local scheme,
 * writing its step profile, then d5-sim-train replaying it on P simulated
 * ranks with the series' scheme. Returns -1, or an exit status. */
static int simulate(series *se, const sc_opts *o, const scaling_fit *fit, const scaling_row *ref,
                    scaling_row *rows, size_t *nrows, const int64_t *mranks, size_t nm,
                    const scaling_row *base)
{
    const scaling_plan *pl = se->pl;
    scaling_words w = {0};
    scaling_profile_words(pl, ref->ranks, se->json, se->profile, &w);
    fprintf(stderr, "[%d/%d] step profile: ", ++se->step, se->steps);
    scaling_print_words(stderr, "", &w);
    fputc('\n', stderr);
    unlink(se->profile);
    int rc = w.failed ? D5_EXIT_CHECK : scaling_run_logged(w.v, se->log);
    scaling_words_free(&w);
    if (rc != 0) {
        fprintf(stderr,
                "d5 scaling: the step profile's run (--distributed local --step-profile) ended "
                "with exit status %d: no simulated rows\n",
                rc);
        scaling_print_tail(se->log, 25);
        return rc;
    }
    /* Rings and recursive doubling are d5's own code; the MPI library's
     * would be SMPI's, not the one measured. */
    const char *comm = strcmp(ref->comm_backend, "recdbl") == 0 ? "recdbl" : "ring";
    int fitted_sum = fit->piecewise && fit->reduce.beta_s_per_byte > 0;
    printf("#\n# simulated (SimGrid, %s): the step of the %lld-rank run, profiled again as the "
           "local scheme (d5 train --step-profile), replayed by d5-sim-train on P simulated "
           "ranks (hosts from %s) with %s's real communication over d5's %s allreduce; sums "
           "costing %s; strong scaling scales the profile's times by %lld / P\n",
           o->simulate, (long long)ref->ranks, o->sim_hostfile, ref->scheme, comm,
           fitted_sum ? "the fitted line of d5 pingpong --exchange" : "the rate measured here",
           (long long)ref->ranks);
    scaling_print_header(stdout);
    for (size_t i = 0; i < nm; i++) {
        int64_t p = mranks[i];
        scaling_replay rp = {
            se->profile, ref->scheme, comm, pl, 5, pl->weak ? 1.0 : (double)ref->ranks / (double)p};
        scaling_words shown = {0};
        scaling_sim_words(&o->sim, fit, p, &rp, &shown);
        fprintf(stderr, "[%d/%d] simulated ranks %lld: ", ++se->step, se->steps, (long long)p);
        scaling_print_words(stderr, "", &shown);
        fputc('\n', stderr);
        scaling_words_free(&shown);
        scaling_row *r = &rows[(*nrows)++];
        *r = *ref;
        rc = scaling_sim_train(&o->sim, fit, p, &rp, se->log, r);
        if (rc != 0) return rc;
        r->modelled = 1;
        r->simulated = 1;
        r->oversubscribed = -1;
        r->ranks = p;
        r->workers = ref->servers > 0 ? (double)p - ref->servers : (double)p;
        r->global_batch = pl->weak ? ref->local_batch * r->workers : ref->global_batch;
        r->local_batch = r->workers > 0 ? r->global_batch / r->workers : NAN;
        r->samples_per_s = r->step.median > 0 ? r->global_batch / r->step.median : NAN;
        r->sent_per_step = r->recv_per_step = NAN;
        snprintf(r->comm_backend, sizeof r->comm_backend, "%s (SimGrid)", comm);
        scaling_rows_relate(r, 1, base);
        scaling_print_row(stdout, r);
    }
    return -1;
}

/* The modelled rows: compute from the measured rows, communication from the
 * alpha-beta ring allreduce. Returns -1, or an exit status. */
static int model(series *se, const sc_opts *o, scaling_row *rows, size_t *nrows,
                 const int64_t *mranks, size_t nm, scaling_context *ctx, char *source,
                 size_t source_size, char *how, size_t how_size)
{
    const scaling_plan *pl = se->pl;
    size_t nmeasured = *nrows;
    const scaling_row *first = &rows[0], *last = &rows[nmeasured - 1];
    const scaling_row *ref = pl->weak ? last : first;
    double compute = ref->compute.median, bytes = NAN;
    for (size_t i = 0; i < nmeasured && !isfinite(bytes); i++) bytes = rows[i].gradient_bytes;
    if (!isfinite(compute) || !isfinite(bytes) || bytes < 0) {
        fprintf(stderr,
                "d5 scaling: cannot model: the %lld-rank run reports no %s (null in its JSON)\n",
                (long long)ref->ranks, !isfinite(compute) ? "compute_time_s" : "gradient_bytes");
        return D5_EXIT_INPUT;
    }
    scaling_fit fit;
    if (o->fit) {
        d5_status s = scaling_fit_read(o->fit, &fit);
        if (s != D5_OK) return cli_fail("scaling", s);
        snprintf(source, source_size, "%s (d5 pingpong %s--fit)", o->fit,
                 fit.piecewise ? "--exchange " : "");
    } else {
        int rc = measure_fit(se, &fit, source, source_size);
        if (rc != 0) return rc;
    }
    double alpha = fit.alpha_s, beta = fit.beta_s_per_byte;
    ctx->alpha_s = alpha;
    ctx->beta_s = beta;
    ctx->alpha_beta_source = source;
    if (pl->weak)
        snprintf(how, how_size,
                 "%.4g ms, the compute time of the %lld-rank run (weak: fixed per rank)",
                 compute * 1e3, (long long)ref->ranks);
    else if (ref->ranks == 1)
        snprintf(how, how_size, "%.4g ms / P, the compute time of the 1-rank run divided by P",
                 compute * 1e3);
    else
        snprintf(how, how_size,
                 "%.4g ms x %lld / P, the compute time of the %lld-rank run (the smallest) "
                 "scaled by %lld / P",
                 compute * 1e3, (long long)ref->ranks, (long long)ref->ranks,
                 (long long)ref->ranks);
    ctx->compute_source = how;

    if (fit.piecewise) {
        printf("#\n# modelled, not measured: step = compute + 2(P-1) exchange(S/P) + (P-1) "
               "sum(S/P) (ring allreduce of every gradient once per step, no overlap with "
               "computation; the piecewise model of a ring's step)\n");
        for (int32_t k = 0; k < fit.exchange.nseg; k++)
            printf("#   exchange from %.0f B: %.3f us + %.5f ns/B\n", fit.exchange.from_bytes[k],
                   fit.exchange.alpha_s[k] * 1e6, fit.exchange.beta_s_per_byte[k] * 1e9);
        printf("#   sum: %.3f us + %.5f ns/B; from %s\n", fit.reduce.alpha_s * 1e6,
               fit.reduce.beta_s_per_byte * 1e9, source);
    } else {
        printf("#\n# modelled, not measured: step = compute + 2(P-1) alpha + 2(P-1)/P S beta "
               "(ring allreduce of every gradient once per step, no overlap with computation)\n");
        printf("#   alpha = %.3f us, beta = %.5f ns/B (1/beta = %.2f GB/s), from %s\n", alpha * 1e6,
               beta * 1e9, beta > 0 ? 1e-9 / beta : INFINITY, source);
    }
    printf("#   S = %.0f B of float32 parameters; compute = %s\n", bytes, how);
    printf("#   speedup and efficiency against the model at P = 1 (compute alone)\n");
    if (!fit.piecewise && (!(alpha >= 0) || !(beta > 0)))
        printf("#   warning: alpha < 0 or beta <= 0 is not a physical fit: the modelled rows are "
               "doubtful\n");
    if (strcmp(ref->scheme, "dsgd") != 0)
        printf("#   warning: the runs used scheme '%s'; the model is dsgd's allreduce\n",
               ref->scheme);
    int64_t maxp = mranks[nm - 1];
    if (!pl->weak && isfinite(ref->global_batch) && (double)maxp > ref->global_batch)
        printf("#   warning: beyond P = %.0f a worker has less than one sample of the global "
               "batch: those rows are arithmetic, not a run that could happen\n",
               ref->global_batch);
    scaling_print_header(stdout);
    scaling_model m = {alpha, beta, bytes, &fit};
    /* Modelled speedups are against the model at P = 1 (compute alone): the
     * measured throughput also holds what the step time leaves out (the
     * first step, evaluation, input), and a ratio of the two would mix them. */
    scaling_row one;
    scaling_model_row(&m, 1, pl->weak ? compute : compute * (double)ref->ranks,
                      pl->weak ? (double)pl->batch : ref->global_batch, &one);
    const scaling_row *base = first->ranks == 1 ? &one : NULL;
    for (size_t i = 0; i < nm; i++) {
        int64_t p = mranks[i];
        double c = pl->weak ? compute : compute * (double)ref->ranks / (double)p;
        double batch = pl->weak ? (double)(pl->batch * p) : ref->global_batch;
        scaling_row *r = &rows[(*nrows)++];
        scaling_model_row(&m, p, c, batch, r);
        scaling_rows_relate(r, 1, base);
        scaling_print_row(stdout, r);
    }
    if (!o->simulate) return -1;
    return simulate(se, o, &fit, ref, rows, nrows, mranks, nm, base);
}

/* Notes on the measured rows: oversubscription, and a batch that did not
 * stay fixed as the mode says it should. */
static void notes(const scaling_plan *pl, const scaling_row *rows, size_t n)
{
    int over = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        over |= rows[i].oversubscribed == 1;
        if (i == 0) continue;
        double a = pl->weak ? rows[i].local_batch : rows[i].global_batch;
        double b = pl->weak ? rows[0].local_batch : rows[0].global_batch;
        moved |= isfinite(a) && isfinite(b) && a != b;
    }
    if (over)
        printf("# oversubscribed: more ranks than CPUs on the node: those rows' timings are not "
               "meaningful\n");
    if (moved)
        printf("# warning: the %s batch changed with the rank count: not %s scaling%s\n",
               pl->weak ? "per-worker" : "global", pl->weak ? "weak" : "strong",
               pl->weak ? "" : " (--sampler sharded-batch splits one global batch)");
}

static int print_only(const scaling_plan *pl, const int64_t *ranks, size_t n, int fit_run)
{
    const char *env = pl->default_launcher && getuid() == 0
                          ? "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                          : "";
    for (size_t i = 0; i < n + (size_t)fit_run; i++) {
        char json[64];
        scaling_words w = {0};
        if (i < n) {
            snprintf(json, sizeof json, "d5-scaling-%lld.json", (long long)ranks[i]);
            scaling_train_words(pl, ranks[i], json, &w);
        } else {
            scaling_pingpong_words(pl, "d5-scaling-pingpong.json", &w);
        }
        if (w.failed) {
            scaling_words_free(&w);
            return cli_fail("scaling", d5_error(D5_ERR_NOMEM, "out of memory"));
        }
        scaling_print_words(stdout, env, &w);
        fputc('\n', stdout);
        scaling_words_free(&w);
    }
    return D5_EXIT_OK;
}

static void echo(const scaling_plan *pl, const cli_spec *spec, int have_one)
{
    cli_echo(stdout, spec);
    scaling_words w = {0};
    for (size_t i = 0; i < pl->launcher.n; i++) scaling_words_add(&w, pl->launcher.v[i]);
    scaling_print_words(stdout, "# launcher: ", &w);
    if (pl->default_launcher && pl->open_mpi)
        printf(" (Open MPI: --oversubscribe beyond this machine's %d cores)", pl->cores);
    else if (pl->default_launcher)
        printf(" (not Open MPI: no --oversubscribe)");
    scaling_words_free(&w);
    scaling_words t = {0};
    scaling_words_add(&t, pl->d5);
    scaling_words_add(&t, "train");
    for (int i = 0; i < pl->ntrain; i++) scaling_words_add(&t, pl->train[i]);
    scaling_print_words(stdout, "\n# train: ", &t);
    scaling_words_free(&t);
    printf(" (each run adds --json FILE)\n");
    if (pl->weak && pl->sharded)
        printf("# weak scaling: the batch of one rank stays %lld; the run on P ranks gets --batch "
               "%lld*P (sharded-batch splits it)\n",
               (long long)pl->batch, (long long)pl->batch);
    else if (pl->weak)
        printf("# weak scaling: --batch is each worker's (partitioned sampler) and stays\n");
    else if (pl->sharded || pl->batch <= 0)
        printf("# strong scaling: the global batch stays as given\n");
    else
        printf("# strong scaling: the global batch stays %lld; the run on P ranks gets --batch "
               "%lld/P per worker (partitioned sampler)\n",
               (long long)pl->batch, (long long)pl->batch);
    if (have_one)
        printf("# speedup X_P / X_1 and efficiency X_P / (P X_1) from the measured throughputs "
               "X, against the 1-rank run\n");
    else
        printf("# no 1-rank run in --ranks: speedup and efficiency are '-'\n");
    printf("# comm%%: exposed communication / step time (medians)\n");
}

static int run_series(scaling_plan *pl, const sc_opts *o, const cli_spec *spec,
                      const int64_t *ranks, size_t nr, const int64_t *mranks, size_t nm)
{
    series se = {.pl = pl, .steps = (int)nr + (nm && !o->fit) + (o->simulate ? (int)nm + 1 : 0)};
    scaling_row *rows = calloc(nr + 2 * nm, sizeof *rows);
    if (!rows) return cli_fail("scaling", d5_error(D5_ERR_NOMEM, "out of memory"));
    const char *tmp = getenv("TMPDIR");
    snprintf(se.dir, sizeof se.dir, "%s/d5-scaling-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(se.dir)) {
        fprintf(stderr, "d5 scaling: cannot make a temporary folder %s: %s\n", se.dir,
                strerror(errno));
        free(rows);
        return D5_EXIT_CHECK;
    }
    snprintf(se.json, sizeof se.json, "%s/run.json", se.dir);
    snprintf(se.log, sizeof se.log, "%s/run.log", se.dir);
    snprintf(se.pp_json, sizeof se.pp_json, "%s/pingpong.json", se.dir);
    snprintf(se.profile, sizeof se.profile, "%s/profile.json", se.dir);
    cli_unfinished_add(se.json);
    cli_unfinished_add(se.log);
    cli_unfinished_add(se.pp_json);
    cli_unfinished_add(se.profile);
    cli_unfinished_add(se.dir);
    /* Open MPI refuses to start as root unless told (containers). */
    if (getuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    echo(pl, spec, ranks[0] == 1);

    size_t n = 0;
    int rc = -1;
    int64_t failed = 0;
    printf("#\n# measured\n");
    scaling_print_header(stdout);
    for (size_t i = 0; i < nr && rc < 0; i++) {
        int r = measure(&se, ranks[i], &rows[n]);
        if (r != 0) {
            rc = r;
            failed = ranks[i];
            break;
        }
        scaling_rows_relate(&rows[n], 1, ranks[0] == 1 ? &rows[0] : NULL);
        scaling_print_row(stdout, &rows[n++]);
    }
    notes(pl, rows, n);
    if (failed)
        fprintf(stderr, "d5 scaling: the series stopped at %lld ranks (exit status %d)%s\n",
                (long long)failed, rc, n ? "; the rows above are the runs that finished" : "");

    char source[4400] = "", how[256] = "";
    scaling_context ctx = {o->mode, "", "", failed == 0, failed, NAN, NAN, NULL, NULL};
    if (rc < 0 && nm)
        rc = model(&se, o, rows, &n, mranks, nm, &ctx, source, sizeof source, how, sizeof how);

    char *launcher = NULL, *train = NULL;
    size_t ll = 0, tl = 0;
    FILE *f = open_memstream(&launcher, &ll);
    if (f) {
        scaling_print_words(f, "", &pl->launcher);
        fclose(f);
    }
    scaling_words t = {0};
    scaling_words_add(&t, pl->d5);
    scaling_words_add(&t, "train");
    for (int i = 0; i < pl->ntrain; i++) scaling_words_add(&t, pl->train[i]);
    if ((f = open_memstream(&train, &tl))) {
        scaling_print_words(f, "", &t);
        fclose(f);
    }
    scaling_words_free(&t);
    ctx.launcher = launcher ? launcher : "";
    ctx.train_command = train;
    d5_status s = D5_OK;
    if (o->outs.json) {
        /* The series' document, then the context and configuration of every --json. */
        char *part = cli_json_sibling(o->outs.json);
        s = part ? scaling_write_json(part, &ctx, rows, n) : D5_ERR_NOMEM;
        if (s == D5_OK) s = cli_json_amend(spec, NULL, part, o->outs.json);
        free(part);
    }
    if (s == D5_OK && o->outs.csv) s = scaling_write_csv(o->outs.csv, rows, n);
    if (s != D5_OK) {
        int r = cli_fail("scaling", s);
        if (rc < 0) rc = r;
    }
    free(launcher);
    free(train);
    free(rows);
    unlink(se.json);
    unlink(se.log);
    unlink(se.pp_json);
    unlink(se.profile);
    rmdir(se.dir);
    cli_unfinished_clear();
    return rc < 0 ? D5_EXIT_OK : rc;
}

int cmd_scaling(int argc, char **argv)
{
    sc_opts o = {0};
    const cli_opt opts[] = {
        {"ranks", CLI_STRING, &o.ranks, "LIST", "rank counts to run, such as 1,2,4 (required)", 0,
         0},
        {"mode", CLI_STRING, &o.mode, "M",
         "strong: the global batch stays; weak: the batch of one rank stays (required). --batch "
         "is a worker's with the partitioned sampler (strong: B/P per run) and the global batch "
         "with sharded-batch (weak: B*P per run)",
         0, 0},
        {"launcher", CLI_STRING, &o.launcher, "CMD",
         "how a run on {n} ranks starts (default \"mpirun -n {n}\", mpirun or mpiexec from PATH, "
         "with --oversubscribe beyond this machine's cores under Open MPI)",
         0, 0},
        {"print-only", CLI_FLAG, &o.print_only, NULL,
         "print the commands, one per line (for a batch system), and run nothing", 0, 0},
        {"model-ranks", CLI_STRING, &o.model_ranks, "LIST",
         "rank counts to model beyond the machine, such as 16,64,256 (rows labelled modelled)", 0,
         0},
        {"fit", CLI_STRING, &o.fit, "FILE.json",
         "alpha and beta of the model from this `d5 pingpong --fit --json` file, or the "
         "piecewise model from a `d5 pingpong --exchange --fit --json` one (default: alpha and "
         "beta measured on 2 ranks through the launcher)",
         0, 0},
        {"simulate", CLI_STRING, &o.simulate, "PLATFORM.xml",
         "also simulate each --model-ranks count: d5's ring allreduce of the gradients on that "
         "many ranks of this SimGrid platform (d5-sim-allreduce under smpirun; rows labelled "
         "simulated), a piecewise --fit's sum as its cost",
         0, 0},
        {"sim-hostfile", CLI_STRING, &o.sim_hostfile, "FILE",
         "with --simulate: the platform's hosts the ranks run on, one a line, in rank order "
         "(smpirun's -hostfile)",
         0, 0},
        CLI_OUTPUT_JSON_AS(&o.outs, "write the series (measured and modelled rows)"),
        CLI_OUTPUT_CSV_AS(&o.outs, "write the series as CSV, one row per rank count"),
    };
    const char **pos = NULL;
    int npos = 0;
    const cli_spec spec = {
        CLI_SPEC(
            "scaling",
            "--ranks LIST --mode strong|weak [--launcher CMD] [--print-only]\n"
            "       [--model-ranks LIST] [--fit FILE.json] [--simulate PLATFORM.xml --sim-hostfile "
            "FILE]\n"
            "       [--json FILE] [--csv FILE]\n"
            "       -- d5 train --distributed SCHEME [TRAIN OPTIONS]",
            "Runs a scaling series of distributed training: the d5 train command after '--', on "
            "each\n"
            "rank count P of --ranks in turn, under the launcher (mpirun -n P), each run writing "
            "its\n"
            "JSON. 'd5' there is this d5 binary. Prints one row per P: ranks, workers, global "
            "batch,\n"
            "step time (median [95% CI]), throughput in samples/s, speedup and efficiency against\n"
            "the 1-rank run (X_P / X_1 and X_P / (P X_1), from throughputs), and the share of the\n"
            "step spent in exposed communication. Rows whose run had more ranks than CPUs are "
            "marked\n"
            "oversubscribed: such timings are not meaningful. A failed run stops the series with\n"
            "its exit status; the rows before it are still printed and written.\n\n"
            "Strong scaling keeps the global batch, weak scaling the batch of one rank: d5 "
            "train's\n"
            "--batch is each worker's with the partitioned sampler (the default; strong runs get\n"
            "B/P) and the global one with --sampler sharded-batch (weak runs get B*P).\n"
            "--model-ranks adds rows labelled\n"
            "modelled: compute time from the measured runs (strong: the smallest run's, scaled by\n"
            "1/P; weak: the largest run's) plus a ring allreduce of the gradients, 2(P-1) alpha +\n"
            "2(P-1)/P S beta, with alpha and beta from --fit or from d5 pingpong --fit run first.",
            opts),
        .pos_list = &pos, .pos_count = &npos};
    int dash = argc;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            dash = i;
            break;
        }
    int rc = cli_parse(&spec, dash, argv);
    if (rc < 0 && npos > 0) {
        fprintf(stderr,
                "d5 scaling: unexpected argument '%s': the train command goes after '--' (d5 "
                "scaling --ranks 1,2 --mode strong -- d5 train --distributed dsgd ...)\n",
                pos[0]);
        rc = D5_EXIT_USAGE;
    }
    free(pos);
    if (rc >= 0) return rc;
    scaling_plan pl = {0};
    int64_t *ranks = NULL, *mranks = NULL;
    size_t nr = 0, nm = 0;
    if (!o.ranks) {
        fprintf(stderr, "d5 scaling: --ranks LIST is required, such as --ranks 1,2,4\n");
        return D5_EXIT_USAGE;
    }
    if (!o.mode || (strcmp(o.mode, "strong") != 0 && strcmp(o.mode, "weak") != 0)) {
        if (o.mode)
            fprintf(stderr, "d5 scaling: --mode %s: expected strong or weak\n", o.mode);
        else
            fprintf(stderr, "d5 scaling: --mode is required: strong or weak\n");
        return D5_EXIT_USAGE;
    }
    pl.weak = strcmp(o.mode, "weak") == 0;
    if (dash == argc) {
        fprintf(stderr, "d5 scaling: expected the training command after '--' (d5 scaling "
                        "--ranks 1,2 --mode strong -- d5 train --distributed dsgd ...)\n");
        return D5_EXIT_USAGE;
    }
    if ((o.fit || o.simulate) && !o.model_ranks) {
        fprintf(stderr, "d5 scaling: %s is for the model: give --model-ranks too\n",
                o.fit ? "--fit" : "--simulate");
        return D5_EXIT_USAGE;
    }
    if (o.simulate && o.print_only) {
        fprintf(stderr, "d5 scaling: --simulate runs its simulations here; it does not go with "
                        "--print-only\n");
        return D5_EXIT_USAGE;
    }
    if (o.sim_hostfile && !o.simulate) {
        fprintf(stderr, "d5 scaling: --sim-hostfile is for --simulate PLATFORM.xml\n");
        return D5_EXIT_USAGE;
    }
    if (o.print_only && (o.outs.json || o.outs.csv)) {
        fprintf(stderr, "d5 scaling: --print-only runs nothing: --json and --csv have nothing to "
                        "write\n");
        return D5_EXIT_USAGE;
    }
    if (!scaling_parse_ranks("--ranks", o.ranks, &ranks, &nr) ||
        (o.model_ranks && !scaling_parse_ranks("--model-ranks", o.model_ranks, &mranks, &nm))) {
        free(ranks);
        return D5_EXIT_USAGE;
    }
    pl.max_ranks = ranks[nr - 1];
    rc = scaling_check_train(argv + dash + 1, argc - dash - 1, &pl);
    if (rc < 0) rc = scaling_setup_launcher(o.launcher, !o.print_only, &pl);
    if (rc < 0 && !o.print_only && !cli_outputs_check("scaling", &o.outs)) rc = D5_EXIT_INPUT;
    if (rc < 0 && o.fit && !o.print_only) {
        scaling_fit f;
        d5_status s = scaling_fit_read(o.fit, &f); /* before minutes of runs */
        if (s != D5_OK) rc = cli_fail("scaling", s);
    }
    if (rc < 0 && o.simulate && !o.print_only) {
        int r = scaling_sim_check(pl.d5, o.simulate, o.sim_hostfile, &o.sim);
        if (r != 0) rc = r;
    }
    if (rc < 0)
        rc = o.print_only ? print_only(&pl, ranks, nr, nm && !o.fit)
                          : run_series(&pl, &o, &spec, ranks, nr, mranks, nm);
    scaling_words_free(&pl.launcher);
    free(ranks);
    free(mranks);
    return rc;
}
