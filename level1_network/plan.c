/* The memory plan: every buffer the schedule needs lives from the step that
 * writes it to the last step that reads it; buffers whose lives do not overlap
 * share memory. Placement is greedy by size (largest first, lowest offset
 * that fits), which is within a few percent of the optimum on CNNs and costs
 * O(n^2) for n buffers. The arena is one 64-byte aligned block. */
#include "executor_internal.h"

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
    *index = ex->nbufs++;
    return D5_OK;
}

static int overlap_in_time(const xbuf *a, const xbuf *b)
{
    return a->first <= b->last && b->first <= a->last;
}

d5_status d5__plan_place(d5_executor *ex)
{
    int32_t n = ex->nbufs;
    int32_t *by_size = d5_alloc(((size_t)n + 1) * sizeof *by_size, "memory plan");
    int32_t *placed = d5_alloc(((size_t)n + 1) * sizeof *placed, "memory plan");
    if (!by_size || !placed) {
        d5_free(by_size);
        d5_free(placed);
        return D5_ERR_NOMEM;
    }
    /* Largest first (insertion sort keeps it stable; n is in the thousands). */
    for (int32_t i = 0; i < n; i++) {
        int32_t j = i;
        while (j > 0 && ex->bufs[by_size[j - 1]].bytes < ex->bufs[i].bytes) {
            by_size[j] = by_size[j - 1];
            j--;
        }
        by_size[j] = i;
    }
    size_t total = 0, unshared = 0;
    int32_t nplaced = 0;
    for (int32_t i = 0; i < n; i++) {
        xbuf *b = &ex->bufs[by_size[i]];
        unshared += b->bytes;
        size_t at = ex->opt.keep_values ? unshared - b->bytes : 0;
        /* placed[] is sorted by offset, so one sweep finds the lowest gap. */
        for (int32_t k = 0; k < nplaced && !ex->opt.keep_values; k++) {
            const xbuf *p = &ex->bufs[placed[k]];
            if (!overlap_in_time(p, b)) continue;
            if (p->offset < at + b->bytes && p->offset + p->bytes > at) at = p->offset + p->bytes;
        }
        b->offset = at;
        if (at + b->bytes > total) total = at + b->bytes;
        int32_t k = nplaced++;
        while (k > 0 && ex->bufs[placed[k - 1]].offset > at) {
            placed[k] = placed[k - 1];
            k--;
        }
        placed[k] = by_size[i];
    }
    d5_free(by_size);
    d5_free(placed);
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
    ex->plan.buffers = n;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        if (x->kind == XV_INIT) ex->plan.param_bytes += x->bytes;
        if (x->kind == XV_CONST) ex->plan.constant_bytes += x->bytes;
    }
    return D5_OK;
}

void *d5__plan_ptr(const d5_executor *ex, int32_t buf)
{
    return ex->arena + ex->bufs[buf].offset;
}
