/* One Chrome/Perfetto trace of every rank's timer: the ranks agree on a
 * common origin, each renders its regions shifted onto it (core's
 * d5_report_trace_events), sends the text to rank 0, and rank 0 writes one
 * file with a process per rank (d5_report_trace_combine). */
#include "comm_internal.h"

#include "d5/report.h"

#include <stdio.h>

#define TAG   D5_COMM_TAG_MAX
#define NAME  "trace"
#define PIECE ((size_t)1 << 30) /* bytes per message */

/* The timer's origin on a clock that every rank of the job reads alike:
 * CLOCK_MONOTONIC on one node; across nodes the wall clock, which is only as
 * aligned as the nodes' clocks are. */
static uint64_t origin_ns(const d5_comm *c, const d5_timer *t)
{
    if (c->local_size < c->size) return d5_timer_origin_unix_ns(t);
    return d5_monotonic_ns() - (uint64_t)d5_timer_now_ns(t);
}

/* This rank's shift onto the common origin (the earliest timer origin of
 * the job), exactly: rank 0's origin is broadcast, and the ranks agree on the
 * smallest difference to it. */
static d5_status common_origin(d5_comm *c, const d5_timer *t, double *offset_ns)
{
    uint64_t mine = t ? origin_ns(c, t) : 0;
    int64_t root = (int64_t)mine;
    d5_status s = d5_comm_broadcast(c, &root, 1, D5_I64, 0, NAME);
    double delta = t ? (double)((int64_t)mine - root) : 0, earliest = delta;
    if (s == D5_OK) s = d5_comm_agree(c, &earliest, 1, D5_COMM_MIN);
    *offset_ns = delta - earliest;
    return s;
}

static d5_status send_text(d5_comm *c, const char *text, int64_t len)
{
    d5_status s = d5_comm_send(c, &len, 1, D5_I64, 0, TAG, NAME);
    for (int64_t off = 0; s == D5_OK && off < len; off += (int64_t)PIECE) {
        size_t n = (size_t)(len - off) < PIECE ? (size_t)(len - off) : PIECE;
        s = d5_comm_send(c, text + off, n, D5_U8, 0, TAG, NAME);
    }
    return s;
}

/* Rank 0: the text of `from`; *text NULL when that rank could not render. */
static d5_status recv_text(d5_comm *c, int32_t from, char **text, size_t *len)
{
    int64_t n = -1;
    *text = NULL;
    *len = 0;
    d5_status s = d5_comm_recv(c, &n, 1, D5_I64, from, TAG, NAME);
    if (s != D5_OK || n < 0) return s;
    char *buf = d5_calloc((size_t)n + 1, 1, "trace of a rank");
    if (!buf) return D5_ERR_NOMEM; /* its messages are still to come: the job fails anyway */
    for (int64_t off = 0; s == D5_OK && off < n; off += (int64_t)PIECE) {
        size_t k = (size_t)(n - off) < PIECE ? (size_t)(n - off) : PIECE;
        s = d5_comm_recv(c, buf + off, k, D5_U8, from, TAG, NAME);
    }
    if (s != D5_OK) {
        d5_free(buf);
        return s;
    }
    *text = buf;
    *len = (size_t)n;
    return D5_OK;
}

/* Rank 0: every rank's events, then the file, unless a rank could not render
 * its events (that rank reports why). */
static d5_status gather_and_write(d5_comm *c, const d5_timer *t, char *mine, size_t mine_len,
                                  const char *path, double offset_ns)
{
    int32_t p = c->size;
    char **texts = d5_calloc((size_t)p, sizeof *texts, "trace texts");
    size_t *lens = d5_calloc((size_t)p, sizeof *lens, "trace lengths");
    d5_status s = texts && lens ? D5_OK : D5_ERR_NOMEM;
    if (s == D5_OK) {
        texts[0] = mine;
        lens[0] = mine_len;
    }
    int all = 1;
    for (int32_t r = 1; s == D5_OK && r < p; r++) s = recv_text(c, r, &texts[r], &lens[r]);
    for (int32_t r = 0; s == D5_OK && r < p; r++) all = all && texts[r];
    if (s == D5_OK && all && !path)
        s = d5_error(D5_ERR_INVALID, "rank 0: d5_comm_trace_merge: NULL path");
    if (s == D5_OK && all) {
        /* The wall-clock time of the common origin, from rank 0's timer. */
        uint64_t origin = d5_timer_origin_unix_ns(t) - (uint64_t)offset_ns;
        s = d5_report_trace_combine(path, (const char *const *)texts, lens, (size_t)p, origin);
    }
    for (int32_t r = 1; texts && r < p; r++) d5_free(texts[r]);
    d5_free(texts);
    d5_free(lens);
    return s;
}

d5_status d5_comm_trace_merge(d5_comm *c, d5_timer *t, const char *path)
{
    if (!c) return d5_error(D5_ERR_INVALID, "d5_comm_trace_merge: NULL communicator");
    double offset = 0;
    d5_status s = common_origin(c, t, &offset);
    if (s != D5_OK) return s;
    char *text = NULL;
    size_t len = 0;
    d5_status mine = D5_OK;
    if (!t) {
        mine = d5_error(D5_ERR_INVALID, "rank %d: d5_comm_trace_merge: NULL timer", (int)c->rank);
    } else {
        char pname[128];
        snprintf(pname, sizeof pname, "rank %d (%s)", (int)c->rank, c->host);
        mine = d5_report_trace_events(t, c->rank, pname, offset, &text, &len);
    }
    if (c->rank == 0)
        s = gather_and_write(c, t, text, len, path, offset);
    else
        s = send_text(c, text, mine == D5_OK ? (int64_t)len : -1);
    d5_free(text);
    if (mine != D5_OK) s = mine;
    /* Every rank returns the same outcome: the worst failure and whose it was. */
    double v[2] = {(double)s, s != D5_OK ? c->rank + 1 : 0};
    d5_status g = d5_comm_agree(c, v, 2, D5_COMM_MAX);
    if (s != D5_OK) return s;
    if (g != D5_OK) return g;
    if (v[0] > 0)
        return d5_error((d5_status)v[0], "rank %d: trace not written: rank %.0f failed (%s)",
                        (int)c->rank, v[1] - 1, d5_status_str((d5_status)v[0]));
    return D5_OK;
}
