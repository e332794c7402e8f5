/* Threads and contention as every computing command shows them: the resolved
 * thread count echoed at the start, one warning line at the end when other
 * processes competed for the cores, and the figures in the results' context. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cli_wait_policy_restart(char **argv)
{
    if (!d5_threads_wait_policy_env()) return;
    execv("/proc/self/exe", argv);
    /* Without /proc the process goes on with OpenMP's default waiting, and
     * says so in its "# threading" line. */
    unsetenv("GOMP_SPINCOUNT");
    unsetenv("D5_WAIT_POLICY");
}

static struct {
    d5_load_sample start;
    int started;
    int32_t measurements, contended, unstable;
    d5_contention last; /* of the whole command, from cli_contention_end */
} run;

int cli_threads_apply(const char *command, int threads)
{
    d5_status s = d5_threads_set(threads);
    if (s != D5_OK) return cli_fail(command, s);
    d5_cores c;
    if ((s = d5_cores_query(&c)) != D5_OK) return cli_fail(command, s);
    d5_threads_info t;
    d5_threads_info_get(&t);
    if (threads > 0)
        printf("# threads: %d (fixed by --threads; %d usable cores)\n", threads, (int)c.usable);
    else
        printf("# threads: %d (automatic: %d usable cores, limited by %s; fewer while other "
               "processes occupy cores)\n",
               (int)t.team, (int)c.usable, c.limited_by);
    printf("# threading: OpenMP %s, OpenBLAS %s, waiting workers: %s\n",
           t.openmp ? "loaded" : "absent", t.openblas, t.wait_policy);
    d5_load_sample_take(&run.start);
    run.started = 1;
    run.measurements = run.contended = run.unstable = 0;
    return -1;
}

int32_t cli_threads_intended(void)
{
    d5_threads_info t;
    d5_threads_info_get(&t);
    return t.requested > 0 ? t.requested : t.usable;
}

void cli_contention_note(const d5_measurement *m)
{
    run.measurements++;
    if (m->contention.contended || m->threads_min < cli_threads_intended()) run.contended++;
    if (m->stability.unstable) run.unstable++;
}

int cli_contention_end(const char *command, d5_contention *out)
{
    d5_contention c;
    memset(&c, 0, sizeof c);
    if (run.started) {
        d5_load_sample now;
        d5_load_sample_take(&now);
        d5_contention_between(&run.start, &now, cli_threads_intended(), &c);
    }
    d5_threads_info t;
    d5_threads_info_get(&t);
    int flagged = c.contended || run.contended > 0 || t.adaptations > 0;
    if (flagged) {
        fprintf(stderr,
                "d5 %s: warning: other processes competed for the cores (over the whole "
                "run: %s)",
                command, c.known ? c.reason : "unknown");
        if (run.measurements)
            fprintf(stderr, "; %d of %d measurements affected", (int)run.contended,
                    (int)run.measurements);
        if (t.adaptations)
            fprintf(stderr, "; automatic threads changed %d times", (int)t.adaptations);
        fprintf(stderr, ". These timings are not those of a quiet machine.\n");
    }
    if (run.unstable)
        fprintf(stderr,
                "d5 %s: warning: %d of %d measurements unstable (several modes or a wide "
                "CI): their medians are not results\n",
                command, (int)run.unstable, (int)run.measurements);
    c.contended = flagged;
    run.last = c;
    if (out) *out = c;
    return flagged;
}

d5_status cli_contention_context(d5_results *r)
{
    const d5_contention *c = &run.last;
    d5_threads_info t;
    d5_threads_info_get(&t);
    d5_status s = d5_results_context(r, "contention", c->contended ? "yes" : "no");
    if (s == D5_OK) s = d5_results_context(r, "contention_detail", c->reason);
    if (s == D5_OK) s = d5_results_context_number(r, "contention_others_cores", c->others_cores);
    if (s == D5_OK)
        s = d5_results_context_number(r, "contention_steal_fraction", c->steal_fraction);
    if (s == D5_OK) s = d5_results_context_number(r, "contention_nivcsw_per_s", c->nivcsw_per_s);
    if (s == D5_OK) s = d5_results_context_number(r, "threads_requested", t.requested);
    if (s == D5_OK) s = d5_results_context_number(r, "threads_usable", t.usable);
    if (s == D5_OK) s = d5_results_context_number(r, "threads_adaptations", t.adaptations);
    if (s == D5_OK) s = d5_results_context(r, "threads_wait_policy", t.wait_policy);
    if (s == D5_OK) s = d5_results_context(r, "openblas_threading", t.openblas);
    return s;
}
