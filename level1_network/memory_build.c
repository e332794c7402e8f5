/* The profile of one recording: the recorder's plan events and core's heap
 * log merged by time and replayed, giving the timeline, the rows' planned,
 * heap and peak bytes, the peak and the blocks live at it. */
#include "memory_internal.h"

#include <string.h>

/* On equal times, a node's start and the values born for it come before the
 * heap events of that moment, a node's end and the values that die after it
 * come after them. */
static int planned_first_on_tie(const d5_memory_recorder *r, const d5__pev *p)
{
    if (p->kind == D5__PEV_BIRTH) return 1;
    if (p->kind == D5__PEV_DEATH) return 0;
    return p->ref > 0 && p->ref < r->node_rows;
}

typedef struct replay {
    d5_memory_profile *p;
    const d5_memory_recorder *r;
    double origin;
    int64_t planned, heap;
    int32_t cur;
    double enter_t;
    int64_t base_heap;
    int64_t peak_point;
    int64_t *born, *died; /* per block: point indices */
    int64_t *buf_block;   /* per plan buffer, -1 */
    int64_t *heap_block;  /* per heap block id, -1 */
} replay;

static double ms(const replay *x, double t_ns)
{
    return (t_ns - x->origin) * 1e-6;
}

static void note_live(replay *x)
{
    int64_t total = x->planned + x->heap;
    d5_memory_row *row = &x->p->rows[x->cur];
    if (total > row->live_peak_bytes) row->live_peak_bytes = total;
}

static void point(replay *x, double t_ns, int64_t delta, int64_t block)
{
    d5_memory_profile *p = x->p;
    int64_t i = p->npoints++;
    p->timeline[i] =
        (d5_memory_point){ms(x, t_ns), x->planned + x->heap, x->planned, x->heap, delta, block};
    note_live(x);
    if (x->planned + x->heap > p->peak_bytes) {
        p->peak_bytes = x->planned + x->heap;
        p->peak_ms = ms(x, t_ns);
        p->peak_row = x->cur;
        p->peak_planned_bytes = x->planned;
        p->peak_heap_bytes = x->heap;
        x->peak_point = i;
    }
    if (x->planned > p->planned_peak_bytes) p->planned_peak_bytes = x->planned;
}

static int64_t new_block(replay *x, const char *label, int32_t kind, int32_t row, int64_t bytes,
                         double t_ns)
{
    d5_memory_profile *p = x->p;
    int64_t b = p->nblocks;
    char *copy = d5_strdup(label, "memory profile");
    if (!copy) return -1;
    p->blocks[b] = (d5_memory_block){copy, kind, row, bytes, ms(x, t_ns), -1, 0, 0};
    x->born[b] = p->npoints; /* the point about to be added */
    x->died[b] = INT64_MAX;
    p->nblocks++;
    return b;
}

static void enter(replay *x, int32_t row, double t_ns)
{
    d5_memory_row *old = &x->p->rows[x->cur], *now = &x->p->rows[row];
    old->duration_ms += ms(x, t_ns) - ms(x, x->enter_t);
    x->cur = row;
    x->enter_t = t_ns;
    x->base_heap = x->heap;
    if (now->start_ms < 0) now->start_ms = ms(x, t_ns);
    note_live(x);
}

static d5_status planned_event(replay *x, const d5__pev *e)
{
    const d5_memory_recorder *r = x->r;
    if (e->kind == D5__PEV_ENTER) {
        enter(x, e->ref >= 0 && e->ref < x->p->nrows ? e->ref : 0, e->t_ns);
        return D5_OK;
    }
    int32_t buf = e->ref;
    int64_t bytes = r->buf_bytes[buf];
    if (e->kind == D5__PEV_BIRTH) {
        int32_t row = r->buf_row[buf];
        int64_t b = new_block(x, r->buf_label[buf], r->buf_kind[buf], row, bytes, e->t_ns);
        if (b < 0) return D5_ERR_NOMEM;
        x->buf_block[buf] = b;
        if (row >= 0) x->p->rows[row].planned_bytes += bytes;
        x->planned += bytes;
        point(x, e->t_ns, bytes, b);
        return D5_OK;
    }
    int64_t b = x->buf_block[buf];
    if (b < 0) return D5_OK; /* never born in this run */
    x->buf_block[buf] = -1;
    x->planned -= bytes;
    x->p->blocks[b].until_ms = ms(x, e->t_ns);
    x->died[b] = x->p->npoints;
    point(x, e->t_ns, -bytes, b);
    return D5_OK;
}

static d5_status heap_event(replay *x, const d5_memory_event *e)
{
    d5_memory_profile *p = x->p;
    int32_t row = e->scope >= 0 && e->scope < p->nrows ? e->scope : 0;
    d5_memory_row *rw = &p->rows[row];
    x->heap = e->live_bytes;
    int64_t b = -1;
    if (e->delta_bytes >= 0) {
        rw->heap_allocated_bytes += e->delta_bytes;
        rw->heap_allocations++;
        b = new_block(x, e->label, D5_MEMORY_HEAP, row, e->delta_bytes, e->t_ns);
        if (b < 0) return D5_ERR_NOMEM;
        x->heap_block[e->block] = b;
    } else {
        rw->heap_freed_bytes -= e->delta_bytes;
        rw->heap_frees++;
        b = x->heap_block[e->block]; /* -1 when its allocation was not logged */
        if (b >= 0) {
            p->blocks[b].until_ms = ms(x, e->t_ns);
            x->died[b] = p->npoints;
        }
    }
    if (row == x->cur && x->heap - x->base_heap > rw->heap_peak_bytes)
        rw->heap_peak_bytes = x->heap - x->base_heap;
    point(x, e->t_ns, e->delta_bytes, b);
    return D5_OK;
}

static d5_status copy_rows(const d5_memory_recorder *r, d5_memory_profile *p)
{
    p->rows = d5_calloc((size_t)r->nrows + 1, sizeof *p->rows, "memory profile");
    if (!p->rows) return D5_ERR_NOMEM;
    p->nrows = r->nrows;
    for (int32_t i = 0; i < r->nrows; i++) {
        const d5__mrow *m = &r->rows[i];
        d5_memory_row *row = &p->rows[i];
        row->phase = m->phase;
        row->node = m->node;
        row->start_ms = -1;
        row->name = d5_strdup(m->name, "memory profile");
        row->op_type = d5_strdup(m->op_type, "memory profile");
        row->backend = d5_strdup(m->backend, "memory profile");
        if (!row->name || !row->op_type || !row->backend) return D5_ERR_NOMEM;
    }
    return D5_OK;
}

static d5_status replay_all(replay *x, const d5_memory_log *log)
{
    const d5_memory_recorder *r = x->r;
    int64_t i = 0;
    size_t j = 0;
    d5_status s = D5_OK;
    while (s == D5_OK && (i < r->npev || j < log->n)) {
        int take_planned = j == log->n;
        if (i < r->npev && j < log->n) {
            const d5__pev *a = &r->pev[i];
            double tb = log->events[j].t_ns;
            take_planned = a->t_ns < tb || (a->t_ns == tb && planned_first_on_tie(r, a));
        }
        if (take_planned)
            s = planned_event(x, &r->pev[i++]);
        else
            s = heap_event(x, &log->events[j++]);
    }
    return s;
}

d5_status d5__memory_build(const d5_memory_recorder *r, const d5_memory_log *log,
                           d5_memory_profile *out)
{
    d5_memory_profile *p = out;
    memset(p, 0, sizeof *p);
    uint64_t max_block = 0;
    for (size_t j = 0; j < log->n; j++)
        if (log->events[j].block > max_block) max_block = log->events[j].block;
    size_t nev = (size_t)r->npev + log->n + 1;
    replay x = {
        .p = p, .r = r, .origin = log->begin_ns, .enter_t = log->begin_ns, .peak_point = -1};
    p->name = d5_strdup(r->name ? r->name : "", "memory profile");
    p->blocks = d5_calloc(nev, sizeof *p->blocks, "memory profile");
    p->timeline = d5_calloc(nev, sizeof *p->timeline, "memory profile");
    x.born = d5_calloc(nev, sizeof *x.born, "memory profile");
    x.died = d5_calloc(nev, sizeof *x.died, "memory profile");
    x.buf_block = d5_alloc(((size_t)r->nbufs + 1) * sizeof *x.buf_block, "memory profile");
    x.heap_block = d5_alloc(((size_t)max_block + 1) * sizeof *x.heap_block, "memory profile");
    d5_status s =
        p->name && p->blocks && p->timeline && x.born && x.died && x.buf_block && x.heap_block
            ? D5_OK
            : D5_ERR_NOMEM;
    for (int32_t b = 0; s == D5_OK && b < r->nbufs; b++) x.buf_block[b] = -1;
    for (uint64_t b = 0; s == D5_OK && b <= max_block; b++) x.heap_block[b] = -1;
    if (s == D5_OK) s = copy_rows(r, p);
    if (s == D5_OK) {
        snprintf(p->clock, sizeof p->clock, "%s", r->clock ? "timer" : "monotonic");
        p->origin_ns = log->begin_ns;
        p->duration_ms = (log->end_ns - log->begin_ns) * 1e-6;
        p->runs = r->runs;
        p->peak_row = -1;
        p->heap = log->counters;
        p->heap_peak_bytes = log->counters.peak_bytes;
        p->dropped_events = log->dropped + (size_t)r->pev_dropped;
        d5_memory_plan plan;
        d5_executor_memory(r->ex, &plan);
        p->arena_bytes = (int64_t)plan.arena_bytes;
        p->unshared_bytes = (int64_t)plan.unshared_bytes;
        p->param_bytes = (int64_t)plan.param_bytes;
        p->constant_bytes = (int64_t)plan.constant_bytes;
        s = replay_all(&x, log);
    }
    if (s == D5_OK) {
        p->rows[x.cur].duration_ms += ms(&x, log->end_ns) - ms(&x, x.enter_t);
        for (int32_t i = 0; i < p->nrows; i++)
            p->rows[i].actual_bytes = p->rows[i].planned_bytes + p->rows[i].heap_peak_bytes;
        for (int64_t b = 0; x.peak_point >= 0 && b < p->nblocks; b++)
            p->blocks[b].live_at_peak = x.born[b] <= x.peak_point && x.died[b] > x.peak_point;
    }
    d5_free(x.born);
    d5_free(x.died);
    d5_free(x.buf_block);
    d5_free(x.heap_block);
    return s;
}
