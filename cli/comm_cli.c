/* Sizes, aliases and the agreed measurement of `d5 allreduce` and `d5 pingpong`. */
#define _POSIX_C_SOURCE 200809L
#include "comm_cli.h"
#include "sizes.h"

#include "d5/timer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int comm_parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)s[0])) return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return 0;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10, end++; break;
    case 'M': shift = 20, end++; break;
    case 'G': shift = 30, end++; break;
    default: break;
    }
    if (strcasecmp(end, "ib") == 0 && shift)
        end += 2;
    else if (strcasecmp(end, "b") == 0)
        end++;
    if (*end || v > (UINT64_MAX >> shift)) return 0;
    *out = (uint64_t)v << shift;
    return 1;
}

void comm_format_bytes(uint64_t b, char *buf, size_t size)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, u++;
    snprintf(buf, size, "%llu %s", (unsigned long long)b, units[u]);
}

void comm_format_time(const d5_measurement *m, char *buf, size_t size)
{
    const d5_stats *st = &m->stats;
    double us = st->median / 1e3;
    int d = us < 1 ? 3 : us < 1000 ? 2 : 1;
    snprintf(buf, size, "%.*f [%.*f, %.*f]%s", d, us, d, st->ci_low / 1e3, d, st->ci_high / 1e3,
             m->stability.unstable ? " unstable" : "");
}

static d5_status push(uint64_t v, uint64_t **out, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 32;
        uint64_t *g = realloc(*out, c * sizeof *g);
        if (!g) return d5_error(D5_ERR_NOMEM, "out of memory for the size list");
        *out = g;
        *cap = c;
    }
    (*out)[(*n)++] = v;
    return D5_OK;
}

d5_status comm_sizes_geometric(uint64_t min, uint64_t max, int factor, uint64_t **out, size_t *n)
{
    if (min > max)
        return d5_error(D5_ERR_INVALID, "--min-bytes %llu is above --max-bytes %llu",
                        (unsigned long long)min, (unsigned long long)max);
    if (factor < 2) return d5_error(D5_ERR_INVALID, "--factor %d: needs at least 2", factor);
    size_t cap = 0;
    d5_status s = D5_OK;
    *out = NULL;
    *n = 0;
    if (min == 0) {
        s = push(0, out, n, &cap);
        min = 1;
    }
    for (uint64_t b = min; s == D5_OK && b <= max; b *= (uint64_t)factor) {
        s = push(b, out, n, &cap);
        if (b > max / (uint64_t)factor) break;
    }
    if (s != D5_OK) free(*out);
    return s;
}

d5_status comm_sizes_csv(const char *spec, size_t elem, uint64_t **out, size_t *n)
{
    char path[1024];
    if (strcmp(spec, "deepbench") == 0)
        snprintf(path, sizeof path, "%s/deepbench/allreduce.csv", sizes_data_dir());
    else
        snprintf(path, sizeof path, "%s", spec);
    d5_status s = d5_file_check_regular(path, "allreduce size list (CSV with size_floats)");
    if (s != D5_OK) return s;
    FILE *f = fopen(path, "r");
    if (!f) return d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    char line[1024];
    int col = -1, lineno = 0;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    while (s == D5_OK && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        char *save = NULL, *field = strtok_r(line, ",", &save);
        for (int i = 0; field; i++, field = strtok_r(NULL, ",", &save)) {
            if (col < 0 && strcmp(field, "size_floats") == 0) col = i;
            if (lineno == 1 || i != col) continue;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(field, &end, 10);
            if (errno || end == field || *end || v > (1ull << 40))
                s = d5_error(D5_ERR_FORMAT, "%s:%d: size_floats '%s' is not a count", path, lineno,
                             field);
            else
                s = push((uint64_t)v * elem, out, n, &cap);
        }
        if (lineno == 1 && col < 0)
            s = d5_error(D5_ERR_FORMAT, "%s: the header has no size_floats column", path);
    }
    fclose(f);
    if (s == D5_OK && *n == 0) s = d5_error(D5_ERR_FORMAT, "%s: no sizes", path);
    if (s != D5_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

char **comm_short_aliases(int argc, char **argv)
{
    static const char *const map[][2] = {
        {"-b", "--min-bytes"}, {"-e", "--max-bytes"}, {"-f", "--factor"}};
    char **a = malloc(((size_t)argc + 1) * sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < argc; i++) {
        a[i] = argv[i];
        for (size_t k = 0; i > 0 && k < sizeof map / sizeof map[0]; k++)
            if (strcmp(argv[i], map[k][0]) == 0) a[i] = (char *)map[k][1];
    }
    a[argc] = NULL;
    return a;
}

/* ---- The agreed measurement ---- */

typedef struct timed {
    d5_comm *comm;
    comm_op_fn op;
    void *ctx;
    uint32_t batch;
    const comm_measure_params *p;
} timed;

/* A region of the trace (--trace); a failure to record is not the run's. */
static void region(d5_timer *timer, const char *key, int start)
{
    if (timer && (start ? d5_timer_start(timer, key) : d5_timer_end(timer, key)) != D5_OK) {
        /* The trace misses this region. */
    }
}

/* Runs k operations; *per_op is the agreed time per operation in ns, scaled. */
static d5_status time_batch(timed *t, uint32_t k, double *per_op)
{
    region(t->p->timer, D5_KEY_BATCH, 1);
    double t0 = (double)d5_monotonic_ns();
    d5_status s = D5_OK;
    for (uint32_t i = 0; s == D5_OK && i < k; i++) s = t->op(t->ctx);
    double v[2] = {s != D5_OK, ((double)d5_monotonic_ns() - t0) / k * t->p->scale};
    region(t->p->timer, D5_KEY_BATCH, 0);
    /* After a time-out the communicator takes no more calls (and the others
     * are told by theirs). */
    if (s == D5_ERR_TIMEOUT) return s;
    if (t->p->rank0_only && d5_comm_rank(t->comm) != 0) v[1] = 0;
    region(t->p->timer, "AGREE", 1);
    d5_status g = d5_comm_agree(t->comm, v, 2, D5_COMM_MAX);
    region(t->p->timer, "AGREE", 0);
    if (s != D5_OK) return s;
    if (g != D5_OK) return g;
    if (v[0] > 0)
        return d5_error(D5_ERR_BACKEND, "rank %d: the operation failed on another rank",
                        (int)d5_comm_rank(t->comm));
    *per_op = v[1];
    return D5_OK;
}

static d5_status sample(void *ctx, double *out)
{
    timed *t = ctx;
    return time_batch(t, t->batch, out);
}

d5_status comm_measure(d5_comm *c, comm_op_fn op, void *ctx, const comm_measure_params *p,
                       d5_measurement *out)
{
    timed t = {c, op, ctx, 1, p};
    /* The pilot: batches of 1, 4, 16, ... until one lasts a millisecond. */
    double per = 0;
    uint32_t k = 1;
    for (;; k *= 4) {
        d5_status s = time_batch(&t, k, &per);
        if (s != D5_OK) return s;
        if (per / p->scale * k >= 1e6 || k >= (1u << 16)) break;
    }
    /* The fastest of three such batches: one preempted batch would shrink
     * the sample count. */
    for (int i = 0; i < 2; i++) {
        double again;
        d5_status s = time_batch(&t, k, &again);
        if (s != D5_OK) return s;
        per = fmin(per, again);
    }
    double real = fmax(per / p->scale, 1.0), agree = (double)d5_monotonic_ns(), v = 0;
    for (int i = 0; i < 3; i++) {
        d5_status s = d5_comm_agree(c, &v, 1, D5_COMM_MAX);
        if (s != D5_OK) return s;
    }
    v = ((double)d5_monotonic_ns() - agree) / 3;
    d5_status s = d5_comm_agree(c, &v, 1, D5_COMM_MAX);
    if (s != D5_OK) return s;
    t.batch = (uint32_t)fmin(fmax(ceil(1e6 / real), 1), 4096);
    double reps = p->budget_s * 1e9 / (t.batch * real + v);
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = 2;
    mp.min_reps = 10;
    mp.max_reps = (uint32_t)fmin(fmax(reps, 10), 10000);
    /* Stopping on a clock would let ranks stop apart: the budget is the
     * sample count above, the same on every rank. */
    mp.max_time_s = 1e9;
    s = d5_measure_samples(sample, &t, &mp, out);
    if (s != D5_OK) return s;
    /* Contention anywhere in the job: every rank's samples are the slowest
     * rank's, so a busy core under any rank shows in them. */
    d5_contention *busy = &out->contention;
    double w[3] = {busy->contended, busy->others_cores, busy->steal_fraction};
    s = d5_comm_agree(c, w, 3, D5_COMM_MAX);
    if (s != D5_OK) {
        d5_measurement_free(out);
        return s;
    }
    if (w[0] > 0 && !busy->contended) {
        busy->contended = 1;
        snprintf(busy->reason, sizeof busy->reason,
                 "on another rank's cores: up to %.1f cores busy with other processes, %.0f%% "
                 "stolen",
                 w[1], 100 * w[2]);
    }
    return D5_OK;
}

int comm_oversubscribed(const d5_comm *c, char *why, size_t size)
{
    d5_comm_info info;
    d5_comm_info_get(c, &info);
    d5_cores cores;
    if (d5_cores_query(&cores) != D5_OK) cores.online = 0;
    snprintf(why, size, "%d rank%s on this node, %d online CPU%s", (int)info.local_size,
             info.local_size == 1 ? "" : "s", (int)cores.online, cores.online == 1 ? "" : "s");
    return cores.online > 0 && info.local_size > cores.online;
}

int comm_fail(d5_comm *c, const char *command, d5_status s)
{
    int rc = cli_fail(command, s);
    if (s != D5_ERR_TIMEOUT) return rc;
    fprintf(stderr, "d5 %s: rank %d: ending the job (exit status %d)\n", command,
            (int)d5_comm_rank(c), D5_EXIT_CHECK);
    d5_comm_abort(c, D5_EXIT_CHECK);
    return rc;
}

int comm_parse(const cli_spec *spec, int argc, char **argv)
{
    char **args = comm_short_aliases(argc, argv);
    if (!args) {
        fprintf(stderr, "d5 %s: out of memory\n", spec->command);
        return D5_EXIT_CHECK;
    }
    int rc = cli_parse(spec, argc, args);
    free(args);
    return rc;
}
