/* Time-outs (d5_comm_params.timeout_s): the deadline of a blocking operation,
 * the wait for a request against it, and the communicator after an operation
 * did not complete in time. A rank that waits spins on the request for a
 * moment (a message about to arrive is not delayed), then sleeps in naps that
 * grow to 100 us, so that it leaves its core to the ranks it waits for. */
#define _POSIX_C_SOURCE 200809L
#include "comm_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define SPIN_NS    50000u  /* spinning before the first nap */
#define NAP_MIN_NS 1000u   /* the first nap; each one after doubles it */
#define NAP_MAX_NS 100000u /* up to this */

uint64_t d5__deadline(const d5_comm *c)
{
    return c->timeout_ns ? d5_monotonic_ns() + c->timeout_ns : 0;
}

int d5__request_wait_quiet(d5_comm_request *r, uint64_t deadline, d5_status *s)
{
    uint64_t start = d5_monotonic_ns(), nap = 0;
    for (;;) {
        int done = 0;
        *s = r->progress(r, 0, &done);
        if (*s != D5_OK || done) return 1;
        uint64_t now = d5_monotonic_ns();
        if (now >= deadline) return 0;
        if (now - start < SPIN_NS) continue;
        nap = nap ? (2 * nap < NAP_MAX_NS ? 2 * nap : NAP_MAX_NS) : NAP_MIN_NS;
        uint64_t left = deadline - now;
        struct timespec ts = {0, (long)(nap < left ? nap : left)};
        nanosleep(&ts, NULL);
    }
}

/* "allreduce 'grad' (1024 float32)", "recv 'pong' (8 uint8) from rank 1". */
static void describe(const d5_comm_request *r, char *buf, size_t size)
{
    const d5_comm *c = r->comm;
    const d5__counters *k = &c->counters;
    const char *name = NULL;
    if (r->a.slot >= 0 && r->a.gen == k->generation && (size_t)r->a.slot < k->nslots)
        name = k->slots[r->a.slot].name;
    size_t n = (size_t)snprintf(buf, size, "%s", d5_comm_op_name(r->a.op));
    if (name && n < size) n += (size_t)snprintf(buf + n, size - n, " '%s'", name);
    if (r->a.op != D5_COMM_OP_BARRIER && n < size)
        n +=
            (size_t)snprintf(buf + n, size - n, " (%zu %s)", r->a.count, d5_dtype_name(r->a.dtype));
    const char *dir = r->a.op == D5_COMM_OP_SEND                                      ? " to"
                      : r->a.op == D5_COMM_OP_RECV || r->a.op == D5_COMM_OP_BROADCAST ? " from"
                                                                                      : NULL;
    if (dir && n < size) snprintf(buf + n, size - n, "%s rank %d", dir, (int)r->a.peer);
}

d5_status d5__request_wait(d5_comm_request *r, uint64_t deadline, int wait)
{
    d5_status s;
    if (!deadline) {
        int done = 0;
        return r->progress(r, 1, &done);
    }
    if (d5__request_wait_quiet(r, deadline, &s)) return s;
    d5_comm *c = r->comm;
    char what[256];
    describe(r, what, sizeof what);
    s = d5_error(D5_ERR_TIMEOUT,
                 "rank %d: %s%s did not complete within %g s: a rank has crashed, hangs or is far "
                 "behind",
                 (int)c->rank, wait ? "wait on " : "", what, c->timeout_s);
    if (!c->broken[0]) snprintf(c->broken, sizeof c->broken, "%s", d5_last_error());
    return s;
}

#if D5_SIM
/* d5-sim-train: the simulated time that copies owe (dist.c's model), paid
 * before anything is communicated so that the order of events stays that of
 * copying for real; the replayed compute pays the rest. */
#include <smpi/smpi.h>
double d5__sim_owed_s = 0;
void d5__sim_pay(void)
{
    double t = d5__sim_owed_s;
    d5__sim_owed_s = 0;
    if (t > 0) smpi_execute(t);
}
#endif

d5_status d5__check_usable(const d5_comm *c, const char *what)
{
    if (!c->broken[0]) return D5_OK;
    return d5_error(D5_ERR_TIMEOUT,
                    "rank %d: %s: not started: the communicator is unusable after an earlier "
                    "time-out (%s)",
                    (int)c->rank, what, c->broken);
}
