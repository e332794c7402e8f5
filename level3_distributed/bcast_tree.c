/* Broadcast along a binomial tree of point-to-point messages, for the ring and
 * recdbl backends. With v = (rank - root) mod P, rank v receives the whole
 * buffer from v - lowbit(v) and sends it to v + 2^k for every 2^k below
 * lowbit(v) (every 2^k < P at the root) with v + 2^k < P. Each rank but the
 * root receives S bytes; rank v sends S times its number of children; the
 * ranks together send (P - 1) * S. */
#include "comm_internal.h"

static d5_status build(d5_comm *c, const d5__op_args *a, d5__sched **out)
{
    int32_t p = c->size, v = (c->rank - a->peer + p) % p;
    d5_status s = d5__check_int_count(c, "broadcast", a->count);
    if (s != D5_OK) return s;
    d5__sched *sc;
    if ((s = d5__sched_create(c, a, 0, &sc)) != D5_OK) return s;
    int32_t mask = 1;
    for (; mask < p; mask <<= 1)
        if (v & mask) {
            d5__step *st;
            if ((s = d5__sched_step(sc, &st)) != D5_OK) break;
            st->recv_from = (v - mask + a->peer) % p;
            st->recv_buf = a->buf;
            st->recv_count = a->count;
            break;
        }
    for (mask >>= 1; s == D5_OK && mask > 0; mask >>= 1) {
        if (v + mask >= p) continue;
        d5__step *st;
        if ((s = d5__sched_step(sc, &st)) != D5_OK) break;
        st->send_to = (v + mask + a->peer) % p;
        st->send_buf = a->buf;
        st->send_count = a->count;
    }
    if (s != D5_OK) {
        d5__sched_free(sc);
        return s;
    }
    *out = sc;
    return D5_OK;
}

d5_status d5__bcast_binomial(d5_comm *c, const d5__op_args *a)
{
    d5__sched *s;
    d5_status st = build(c, a, &s);
    return st == D5_OK ? d5__sched_run(s) : st;
}

d5_status d5__ibcast_binomial(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    d5__sched *s;
    d5_status st = build(c, a, &s);
    return st == D5_OK ? d5__sched_start(s, r) : st;
}
