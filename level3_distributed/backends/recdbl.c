/* recdbl: d5's recursive doubling allreduce on MPI point-to-point messages
 * (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
 * Operations in MPICH", IJHPCA 2005).
 *
 * With P a power of two, log2(P) steps: at step k rank r exchanges its whole
 * buffer with rank r XOR 2^k and adds what it received, so each rank sends and
 * receives log2(P) * S bytes. Otherwise, with p' the largest power of two below
 * P and q = P - p', the first 2q ranks fold: each even one sends its buffer to
 * the odd one above it and sits out; p' ranks double; each odd one then sends
 * the result back. An even rank below 2q sends and receives S; an odd one
 * (log2(p') + 1) * S; a rank from 2q on log2(p') * S.
 * Broadcast is the binomial tree of bcast_tree.c. */
#include "../comm_internal.h"

static d5_status exchange(d5__sched *sc, int32_t to, int32_t from, void *send, void *recv, size_t n,
                          void *reduce_into)
{
    d5__step *st;
    d5_status s = d5__sched_step(sc, &st);
    if (s != D5_OK) return s;
    st->send_to = to;
    st->send_buf = send;
    st->send_count = to >= 0 ? n : 0;
    st->recv_from = from;
    st->recv_buf = recv;
    st->recv_count = from >= 0 ? n : 0;
    if (reduce_into) st->post = (d5__act){D5__ACT_REDUCE, reduce_into, recv, n, n};
    return D5_OK;
}

static d5_status build(d5_comm *c, const d5__op_args *a, d5__sched **out)
{
    int32_t p = c->size, r = c->rank, pof2 = 1;
    while (pof2 * 2 <= p) pof2 *= 2;
    int32_t rem = p - pof2;
    size_t n = a->count, e = d5_dtype_size(a->dtype);
    d5_status s = d5__check_int_count(c, "recursive doubling allreduce", n);
    if (s != D5_OK) return s;
    d5__sched *sc;
    s = d5__sched_create(c, a, p > 1 ? n * e : 0, &sc);
    if (s != D5_OK) return s;
    *out = sc;
    void *buf = a->buf, *tmp = sc->scratch;
    int32_t nr; /* rank among the p' that double, -1 for a folded one */
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            s = exchange(sc, r + 1, -1, buf, NULL, n, NULL);
            nr = -1;
        } else {
            s = exchange(sc, -1, r - 1, NULL, tmp, n, buf);
            nr = r / 2;
        }
    } else {
        nr = r - rem;
    }
    for (int32_t mask = 1; s == D5_OK && nr >= 0 && mask < pof2; mask <<= 1) {
        int32_t np = nr ^ mask, peer = np < rem ? 2 * np + 1 : np + rem;
        s = exchange(sc, peer, peer, buf, tmp, n, buf);
    }
    if (s == D5_OK && r < 2 * rem)
        s = r % 2 ? exchange(sc, r - 1, -1, buf, NULL, n, NULL)
                  : exchange(sc, -1, r + 1, NULL, buf, n, NULL);
    return s;
}

D5__SCHED_COMM_OPS(d5__comm_ops_recdbl, build);
