/* d5_comm_trace_merge under mpirun: one trace file with a process per rank,
 * read back with jansson. Rank r creates its timer r * 200 ms after rank 0,
 * so that a region every rank opens right after a barrier starts at the same
 * time in the file only if the merge put the ranks on one time line. Also:
 * a failure on one rank (no timer, a file that cannot be written) fails the
 * call on every rank. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_check.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Checks the merged file on rank 0. */
static void check_file(const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    CHECK(doc != NULL, "%s does not parse: %s (line %d)", path, err.text, err.line);
    if (!doc) return;
    json_t *events = json_object_get(doc, "traceEvents"), *e;
    CHECK(json_is_array(events), "no traceEvents array");
    CHECK(json_is_integer(json_object_get(json_object_get(doc, "otherData"), "origin_unix_ns")),
          "no otherData.origin_unix_ns");
    int named[8] = {0}, regions[8] = {0}, allreduces[8] = {0};
    double lined_up[8];
    for (int r = 0; r < 8; r++) lined_up[r] = NAN;
    size_t i;
    json_array_foreach(events, i, e)
    {
        json_int_t pid = json_integer_value(json_object_get(e, "pid"));
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        CHECK(pid >= 0 && pid < size && name && ph, "event %zu: pid %lld, name %s", i,
              (long long)pid, name ? name : "(none)");
        if (pid < 0 || pid >= size || pid >= 8 || !name || !ph) continue;
        if (strcmp(name, "process_name") == 0) {
            const char *pname =
                json_string_value(json_object_get(json_object_get(e, "args"), "name"));
            char want[32];
            snprintf(want, sizeof want, "rank %lld (", (long long)pid);
            CHECK(pname && strncmp(pname, want, strlen(want)) == 0, "process %lld named '%s'",
                  (long long)pid, pname ? pname : "(none)");
            named[pid]++;
        }
        if (strcmp(ph, "X") != 0) continue;
        double ts = json_number_value(json_object_get(e, "ts"));
        CHECK(ts >= 0, "rank %lld: %s at %g us, before the common origin", (long long)pid, name,
              ts);
        regions[pid]++;
        allreduces[pid] += strcmp(name, D5_KEY_ALLREDUCE) == 0;
        if (strcmp(name, "LINED_UP") == 0) lined_up[pid] = ts;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < size && r < 8; r++) {
        CHECK(named[r] == 1 && regions[r] >= 4 && allreduces[r] == 3,
              "rank %d: %d process names, %d regions, %d allreduces", r, named[r], regions[r],
              allreduces[r]);
        lo = fmin(lo, lined_up[r]);
        hi = fmax(hi, lined_up[r]);
    }
    /* The timers started 200 ms apart: aligned, the ranks' regions after the
     * barrier start within a few ms (50 ms with more ranks than cores). */
    CHECK(hi - lo < 50e3, "regions after a barrier start %g us apart", hi - lo);
    json_decref(doc);
}

int main(void)
{
    d5_comm *c = mpi_check_world("test_comm_trace", 0);
    if (!c) return 1;
    rank = mpi_check_rank;
    size = d5_comm_size(c);
    CHECK(size <= 8, "up to 8 ranks");
    char path[128];
    snprintf(path, sizeof path, "/tmp/d5-test-trace-%ld.json", (long)getpid());

    CHECK_OK(d5_comm_barrier(c));
    sleep_ms(200L * rank);
    d5_timer *t = NULL;
    CHECK_OK(d5_timer_create(NULL, &t));
    CHECK_OK(d5_comm_attach_timer(c, t));
    float v[64] = {0};
    for (int i = 0; i < 3; i++) CHECK_OK(d5_comm_allreduce(c, v, 64, D5_F32, "grad"));
    CHECK_OK(d5_comm_barrier(c));
    CHECK_OK(d5_timer_start(t, "LINED_UP"));
    CHECK_OK(d5_timer_end(t, "LINED_UP"));
    CHECK_OK(d5_comm_attach_timer(c, NULL));

    CHECK_OK(d5_comm_trace_merge(c, t, rank == 0 ? path : NULL));
    if (rank == 0) {
        check_file(path);
        unlink(path);
    }

    /* A rank without a timer, a file that cannot be written: every rank fails. */
    d5_status s = d5_comm_trace_merge(c, rank == size - 1 ? NULL : t, path);
    CHECK(s == D5_ERR_INVALID && strstr(d5_last_error(), "rank"), "no timer on rank %d: %s: %s",
          size - 1, d5_status_name(s), d5_last_error());
    s = d5_comm_trace_merge(c, t, "/nonexistent-d5-dir/trace.json");
    CHECK(s == D5_ERR_IO, "a folder that does not exist: %s: %s", d5_status_name(s),
          d5_last_error());
    CHECK(access(path, F_OK) != 0, "a failed merge left %s", path);
    CHECK_STATUS(d5_comm_trace_merge(NULL, t, path), D5_ERR_INVALID);

    d5_timer_free(t);
    int rc = mpi_check_finish(c, "test_comm_trace");
    d5_comm_free(c);
    return rc;
}
