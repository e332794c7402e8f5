/* Byte and message counters: per operation kind, and per name through a small
 * hash index (names are tensor names: a few hundred per model). */
#include "comm_internal.h"

#include <string.h>

static uint64_t hash(const char *s)
{
    return d5_fnv1a(D5_FNV1A_OFFSET, s, strlen(s));
}

/* The slot of a name, or -1. */
static int32_t find(const d5__counters *k, const char *name)
{
    if (!k->index_cap) return -1;
    size_t mask = k->index_cap - 1;
    for (size_t i = hash(name) & mask;; i = (i + 1) & mask) {
        int32_t v = k->index[i];
        if (v == 0) return -1;
        if (strcmp(k->slots[v - 1].name, name) == 0) return v - 1;
    }
}

static d5_status grow_index(d5__counters *k)
{
    size_t cap = k->index_cap ? 2 * k->index_cap : 16;
    int32_t *index = d5_calloc(cap, sizeof *index, "communicator counter names");
    if (!index) return D5_ERR_NOMEM;
    for (size_t s = 0; s < k->nslots; s++) {
        size_t i = hash(k->slots[s].name) & (cap - 1);
        while (index[i]) i = (i + 1) & (cap - 1);
        index[i] = (int32_t)s + 1;
    }
    d5_free(k->index);
    k->index = index;
    k->index_cap = cap;
    return D5_OK;
}

d5_status d5__counters_slot(d5__counters *k, const char *name, int32_t *slot)
{
    *slot = -1;
    if (!name) return D5_OK;
    int32_t found = find(k, name);
    if (found >= 0) {
        *slot = found;
        return D5_OK;
    }
    if (k->nslots >= (size_t)INT32_MAX - 1)
        return d5_error(D5_ERR_RANGE, "communicator counters: too many names");
    if (2 * (k->nslots + 1) > k->index_cap) {
        d5_status s = grow_index(k);
        if (s != D5_OK) return s;
    }
    if (d5_grow(&k->slots, &k->cap, k->nslots + 1, sizeof *k->slots,
                "communicator counter names") != D5_OK)
        return D5_ERR_NOMEM;
    d5__name_slot *n = &k->slots[k->nslots];
    memset(n, 0, sizeof *n);
    n->name = d5_strdup(name, "communicator counter name");
    if (!n->name) return D5_ERR_NOMEM;
    size_t i = hash(name) & (k->index_cap - 1);
    while (k->index[i]) i = (i + 1) & (k->index_cap - 1);
    k->index[i] = (int32_t)k->nslots + 1;
    *slot = (int32_t)k->nslots++;
    return D5_OK;
}

static void clear(d5__counters *k)
{
    uint32_t generation = k->generation + 1;
    for (size_t i = 0; i < k->nslots; i++) d5_free(k->slots[i].name);
    d5_free(k->slots);
    d5_free(k->index);
    memset(k, 0, sizeof *k);
    k->generation = generation;
}

void d5__counters_free(d5__counters *k)
{
    clear(k);
}

static void add(d5_comm_counter *c, uint64_t sent, uint64_t recv, uint64_t ms, uint64_t mr)
{
    c->bytes_sent += sent;
    c->bytes_recv += recv;
    c->msgs_sent += ms;
    c->msgs_recv += mr;
}

void d5__count(d5_comm *c, d5_comm_op op, int32_t slot, uint32_t gen, uint64_t sent, uint64_t recv,
               uint64_t msgs_sent, uint64_t msgs_recv)
{
    add(&c->counters.by_op[op], sent, recv, msgs_sent, msgs_recv);
    if (slot >= 0 && gen == c->counters.generation)
        add(&c->counters.slots[slot].by_op[op], sent, recv, msgs_sent, msgs_recv);
}

void d5__count_call(d5_comm *c, d5_comm_op op, int32_t slot)
{
    c->counters.by_op[op].calls++;
    if (slot >= 0) c->counters.slots[slot].by_op[op].calls++;
}

void d5__count_payload(d5_comm *c, d5_comm_op op, int32_t slot, uint32_t gen, uint64_t sent,
                       uint64_t recv)
{
    d5__count(c, op, slot, gen, sent, recv, sent > 0, recv > 0);
}

d5_status d5_comm_counters(const d5_comm *c, d5_comm_op op, const char *name, d5_comm_counter *out)
{
    if (!c || !out) return d5_error(D5_ERR_INVALID, "d5_comm_counters: NULL argument");
    if (op != D5_COMM_OP_ALL && (op < 0 || op >= D5_COMM_OP_COUNT))
        return d5_error(D5_ERR_INVALID, "d5_comm_counters: operation kind %d is unknown", (int)op);
    const d5_comm_counter *src = c->counters.by_op;
    if (name) {
        int32_t slot = find(&c->counters, name);
        if (slot < 0)
            return d5_error(D5_ERR_NOTFOUND,
                            "rank %d: no communication operation was named '%s' since the "
                            "counters were reset",
                            (int)c->rank, name);
        src = c->counters.slots[slot].by_op;
    }
    d5_comm_counter sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < D5_COMM_OP_COUNT; i++) {
        if (op != D5_COMM_OP_ALL && op != i) continue;
        sum.calls += src[i].calls;
        add(&sum, src[i].bytes_sent, src[i].bytes_recv, src[i].msgs_sent, src[i].msgs_recv);
    }
    *out = sum;
    return D5_OK;
}

size_t d5_comm_counter_names(const d5_comm *c)
{
    return c ? c->counters.nslots : 0;
}

const char *d5_comm_counter_name(const d5_comm *c, size_t i)
{
    return c && i < c->counters.nslots ? c->counters.slots[i].name : NULL;
}

void d5_comm_counters_reset(d5_comm *c)
{
    if (c) clear(&c->counters);
}
