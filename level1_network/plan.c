/* The memory plan: every buffer the schedule needs lives from the step that
 * writes it to the last step that reads it; buffers whose lives do not overlap
 * share memory. Placement is greedy by size (largest first, lowest offset
 * that fits), which is within a few percent of the optimum on CNNs. Each
 * buffer is checked only against the placed buffers alive during its own
 * life, found through per-step lists, so a long chain costs time linear in its
 * length. The arena is one 64-byte aligned block; each device memory the
 * schedule uses has an arena of its own, planned the same way (device.c). */
#include "executor_internal.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

d5_status d5__plan_add(d5_executor *ex, size_t bytes, int32_t first, int32_t last, int32_t *index)
{
    if (ex->nbufs == ex->buf_cap) {
        int32_t cap = ex->buf_cap ? ex->buf_cap * 2 : 64;
        xbuf *b = d5_realloc(ex->bufs, (size_t)ex->buf_cap * sizeof *b, (size_t)cap * sizeof *b,
                             "memory plan");
        if (!b) return D5_ERR_NOMEM;
        ex->bufs = b;
        ex->buf_cap = cap;
    }
    xbuf *b = &ex->bufs[ex->nbufs];
    b->bytes = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    b->first = first;
    b->last = last;
    b->offset = 0;
    b->mem = 0;
    *index = ex->nbufs++;
    return D5_OK;
}

/* A buffer's index with the key it is sorted by (qsort takes no context). */
typedef struct keyed {
    size_t key;
    int32_t index;
} keyed;

/* Largest first; equal sizes in the order they were added. */
static int by_size_desc(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_offset(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Lists of the placed buffers alive at each step: `at[t]` holds `len[t]` of
 * `cap[t]` indices. */
typedef struct steps {
    int32_t **at, *len, *cap, n;
} steps;

static void steps_free(steps *st)
{
    for (int32_t t = 0; st->at && t < st->n; t++) d5_free(st->at[t]);
    d5_free(st->at);
    d5_free(st->len);
    d5_free(st->cap);
}

static d5_status steps_add(steps *st, int32_t t, int32_t b)
{
    if (st->len[t] == st->cap[t]) {
        int32_t cap = st->cap[t] ? 2 * st->cap[t] : 4;
        int32_t *p = d5_realloc(st->at[t], (size_t)st->cap[t] * sizeof *p, (size_t)cap * sizeof *p,
                                "memory plan");
        if (!p) return D5_ERR_NOMEM;
        st->at[t] = p;
        st->cap[t] = cap;
    }
    st->at[t][st->len[t]++] = b;
    return D5_OK;
}

/* Steps clamped to the plan's range: D5__STEP_END is the last one. */
static int32_t clamp_step(int32_t t, int32_t n)
{
    return t < 0 ? 0 : t >= n ? n - 1 : t;
}

/* Places the buffers of memory `mem` (0: the host) from offset 0 of its own
 * arena; *total is the arena's size. */
static d5_status place(d5_executor *ex, int32_t mem, size_t *total, size_t *unshared)
{
    int32_t n = ex->nbufs, nsteps = 1;
    for (int32_t i = 0; i < n; i++) {
        if (ex->bufs[i].first != D5__STEP_END && ex->bufs[i].first + 2 > nsteps)
            nsteps = ex->bufs[i].first + 2;
        if (ex->bufs[i].last != D5__STEP_END && ex->bufs[i].last + 2 > nsteps)
            nsteps = ex->bufs[i].last + 2;
    }
    keyed *by_size = d5_alloc(((size_t)n + 1) * sizeof *by_size, "memory plan");
    int32_t *seen = d5_calloc((size_t)n + 1, sizeof *seen, "memory plan");
    keyed *near = d5_alloc(((size_t)n + 1) * sizeof *near, "memory plan");
    steps st = {d5_calloc((size_t)nsteps, sizeof *st.at, "memory plan"),
                d5_calloc((size_t)nsteps, sizeof *st.len, "memory plan"),
                d5_calloc((size_t)nsteps, sizeof *st.cap, "memory plan"), nsteps};
    d5_status s = D5_OK;
    if (!by_size || !seen || !near || !st.at || !st.len || !st.cap) s = D5_ERR_NOMEM;
    int32_t m = 0;
    for (int32_t i = 0; s == D5_OK && i < n; i++)
        if (ex->bufs[i].mem == mem) by_size[m++] = (keyed){ex->bufs[i].bytes, i};
    if (s == D5_OK) qsort(by_size, (size_t)m, sizeof *by_size, by_size_desc);
    *total = *unshared = 0;
    for (int32_t i = 0; s == D5_OK && i < m; i++) {
        int32_t bi = by_size[i].index;
        xbuf *b = &ex->bufs[bi];
        *unshared += b->bytes;
        size_t at = ex->opt.keep_values ? *unshared - b->bytes : 0;
        int32_t t0 = clamp_step(b->first, nsteps), t1 = clamp_step(b->last, nsteps);
        if (!ex->opt.keep_values) {
            /* The placed buffers alive with this one, by offset: one sweep
             * finds the lowest gap. */
            int32_t nnear = 0;
            for (int32_t t = t0; t <= t1; t++)
                for (int32_t k = 0; k < st.len[t]; k++) {
                    int32_t p = st.at[t][k];
                    if (seen[p] == i + 1) continue;
                    seen[p] = i + 1;
                    near[nnear++] = (keyed){ex->bufs[p].offset, p};
                }
            qsort(near, (size_t)nnear, sizeof *near, by_offset);
            for (int32_t k = 0; k < nnear; k++) {
                const xbuf *p = &ex->bufs[near[k].index];
                if (p->offset < at + b->bytes && p->offset + p->bytes > at)
                    at = p->offset + p->bytes;
            }
        }
        b->offset = at;
        if (at + b->bytes > *total) *total = at + b->bytes;
        for (int32_t t = t0; s == D5_OK && t <= t1; t++) s = steps_add(&st, t, bi);
    }
    d5_free(by_size);
    d5_free(seen);
    d5_free(near);
    steps_free(&st);
    return s;
}

d5_status d5__plan_place(d5_executor *ex)
{
    size_t total = 0, unshared = 0;
    d5_status s = place(ex, 0, &total, &unshared);
    if (s != D5_OK) return s;
    /* Never empty: a value of zero elements still needs an address. */
    d5_allocator a = d5_allocator_get();
    size_t bytes = total > 0 ? total : ALIGN;
    ex->arena = a.alloc(a.ctx, bytes, ALIGN);
    if (!ex->arena)
        return d5_error(D5_ERR_NOMEM, "out of memory allocating the %zu-byte activation arena",
                        total);
    memset(ex->arena, 0, bytes);
    ex->arena_bytes = total;
    ex->plan.arena_bytes = total;
    ex->plan.unshared_bytes = unshared;
    ex->plan.buffers = ex->nbufs;
    ex->plan.device_bytes = 0;
    for (int32_t m = 1; m <= ex->ndevs; m++) {
        size_t dev_total = 0, dev_unshared = 0;
        if ((s = place(ex, m, &dev_total, &dev_unshared)) != D5_OK) return s;
        s = ex->devs[m]->alloc(dev_total > 0 ? dev_total : ALIGN, &ex->dev_arena[m]);
        if (s != D5_OK)
            return d5_error(s, "the %zu-byte activation arena in %s memory: %s", dev_total,
                            ex->devs[m]->name, d5_last_error());
        ex->plan.device_bytes += dev_total;
    }
    ex->plan.blocked_values = 0;
    for (int32_t v = 0; v < ex->nvals; v++) ex->plan.blocked_values += ex->vals[v].blocked != 0;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        if (x->kind == XV_INIT) ex->plan.param_bytes += x->bytes;
        if (x->kind == XV_CONST) ex->plan.constant_bytes += x->bytes;
    }
    return D5_OK;
}

void *d5__plan_ptr(const d5_executor *ex, int32_t buf)
{
    const xbuf *b = &ex->bufs[buf];
    return (b->mem ? (unsigned char *)ex->dev_arena[b->mem] : ex->arena) + b->offset;
}
