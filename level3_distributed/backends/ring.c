/* ring: d5's ring allreduce on MPI point-to-point messages (Patarasuk & Yuan,
 * "Bandwidth optimal all-reduce algorithms for clusters of workstations",
 * JPDC 2009; the algorithm of Baidu's ring allreduce and NCCL's rings).
 *
 * The buffer of N elements is cut into P chunks of c = ceil(N / P) elements.
 * Reduce-scatter: in P - 1 steps each rank sends a chunk to its right
 * neighbour and adds the chunk it receives from its left one, so that rank r
 * ends with the sum of chunk (r + 1) mod P. Allgather: in P - 1 more steps the
 * summed chunks travel round the ring. Every message is c elements: a chunk
 * shorter than c (the tail of an uneven N) goes out padded with zeros from a
 * staging buffer and comes in through the scratch buffer. Each rank thus sends
 * and receives 2 (P - 1) c elements: 2 (P - 1) / P * S bytes when P divides N.
 * Broadcast is the binomial tree of bcast_tree.c. */
#include "../comm_internal.h"

static size_t valid(size_t chunk, size_t i, size_t n)
{
    size_t off = i * chunk;
    return off >= n ? 0 : (n - off < chunk ? n - off : chunk);
}

/* The send of chunk i: straight from the buffer when full, else padded. */
static void send_chunk(d5__step *st, char *buf, char *stage, size_t chunk, size_t i, size_t n,
                       size_t e, int32_t to)
{
    size_t v = valid(chunk, i, n);
    st->send_to = to;
    st->send_count = chunk;
    if (v == chunk) {
        st->send_buf = buf + i * chunk * e;
        return;
    }
    st->pre = (d5__act){D5__ACT_PAD, stage, v ? buf + i * chunk * e : buf, v, chunk};
    st->send_buf = stage;
}

static d5_status build(d5_comm *c, const d5__op_args *a, d5__sched **out)
{
    size_t p = (size_t)c->size, r = (size_t)c->rank, n = a->count;
    size_t e = d5_dtype_size(a->dtype), chunk = (n + p - 1) / p;
    d5_status s = d5__check_int_count(c, "ring allreduce chunk", chunk);
    if (s != D5_OK) return s;
    d5__sched *sc;
    s = d5__sched_create(c, a, p > 1 ? 2 * chunk * e : 0, &sc);
    if (s != D5_OK) return s;
    *out = sc;
    char *buf = a->buf, *tmp = sc->scratch, *stage = tmp + chunk * e;
    int32_t right = (int32_t)((r + 1) % p), left = (int32_t)((r + p - 1) % p);
    for (size_t k = 0; s == D5_OK && p > 1 && k < p - 1; k++) { /* reduce-scatter */
        size_t si = (r + p - k) % p, ri = (r + 2 * p - k - 1) % p;
        d5__step *st;
        if ((s = d5__sched_step(sc, &st)) != D5_OK) break;
        send_chunk(st, buf, stage, chunk, si, n, e, right);
        st->recv_from = left;
        st->recv_buf = tmp;
        st->recv_count = chunk;
        size_t v = valid(chunk, ri, n);
        if (v) st->post = (d5__act){D5__ACT_REDUCE, buf + ri * chunk * e, tmp, v, v};
    }
    for (size_t k = 0; s == D5_OK && p > 1 && k < p - 1; k++) { /* allgather */
        size_t si = (r + 1 + p - k) % p, ri = (r + p - k) % p;
        d5__step *st;
        if ((s = d5__sched_step(sc, &st)) != D5_OK) break;
        send_chunk(st, buf, stage, chunk, si, n, e, right);
        st->recv_from = left;
        st->recv_count = chunk;
        size_t v = valid(chunk, ri, n);
        if (v == chunk) {
            st->recv_buf = buf + ri * chunk * e;
        } else {
            st->recv_buf = tmp;
            if (v) st->post = (d5__act){D5__ACT_COPY, buf + ri * chunk * e, tmp, v, v};
        }
    }
    return s;
}

D5__SCHED_COMM_OPS(d5__comm_ops_ring, build);
