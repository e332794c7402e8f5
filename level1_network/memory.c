/* The memory recorder: one run of an executor watched through its events.
 * The memory plan says when each planned value becomes live (before the node
 * that writes it) and dead (after its last reader); the heap accounting of
 * core logs every allocation, tagged with the node that ran (the scope). At
 * the end both streams are merged by time into one timeline (memory_build.c).
 *
 * While a recording is on, the handler allocates nothing: its event array is
 * sized at create, so the recorder never shows up in what it records. */
#include "memory_internal.h"

#include <string.h>

/* Steps as in executor_internal.h: forward node i at step i, its backward at
 * 2F - 1 - i. */
static int32_t step_of(const d5_memory_recorder *r, int32_t phase, int32_t node)
{
    return phase == D5_PHASE_FORWARD ? node : 2 * r->nnodes - 1 - node;
}

static void push(d5_memory_recorder *r, double t, int32_t kind, int32_t ref)
{
    if (r->npev == r->pev_cap) {
        r->pev_dropped++;
        return;
    }
    r->pev[r->npev++] = (d5__pev){t, kind, ref};
}

static void births(d5_memory_recorder *r, int32_t step, double t)
{
    for (int32_t k = r->birth_start[step]; k < r->birth_start[step + 1]; k++)
        push(r, t, D5__PEV_BIRTH, r->birth_buf[k]);
}

static void deaths(d5_memory_recorder *r, int32_t step, double t)
{
    for (int32_t k = r->death_start[step]; k < r->death_start[step + 1]; k++)
        push(r, t, D5__PEV_DEATH, r->death_buf[k]);
}

/* Steps that ran no node (views, nodes without a backward) up to `step`. */
static void skip_to(d5_memory_recorder *r, int32_t step, double t)
{
    for (int32_t s = r->cursor + 1; s < step; s++) {
        births(r, s, t);
        deaths(r, s, t);
    }
    if (step - 1 > r->cursor) r->cursor = step - 1;
}

static void enter(d5_memory_recorder *r, int32_t row, double t)
{
    push(r, t, D5__PEV_ENTER, row);
    r->cur_row = row;
    d5_memory_scope_set(row);
}

static d5_status on_event(void *user, const d5_event_info *e)
{
    d5_memory_recorder *r = user;
    if (!r->recording) return D5_OK;
    int32_t nsteps = 2 * r->nnodes;
    switch (e->event) {
    case D5_EVENT_BEFORE_EXECUTOR:
        r->runs++;
        if (r->run_state == 0) {
            r->run_state = 1;
            r->cursor = -1;
        }
        return D5_OK;
    case D5_EVENT_BEFORE_NODE: {
        if (r->run_state != 1 || e->node < 0 || e->node >= r->nnodes) return D5_OK;
        int32_t step = step_of(r, e->phase, e->node);
        int32_t row = e->phase == D5_PHASE_FORWARD ? r->fwd_row[e->node] : r->bwd_row[e->node];
        double t = d5_memory_now_ns();
        skip_to(r, step, t);
        enter(r, row >= 0 ? row : r->base_row, t); /* its outputs are born inside it */
        births(r, step, t);
        return D5_OK;
    }
    case D5_EVENT_AFTER_NODE: {
        if (r->run_state != 1 || e->node < 0 || e->node >= r->nnodes) return D5_OK;
        int32_t step = step_of(r, e->phase, e->node);
        d5_memory_scope_set(r->base_row);
        double t = d5_memory_now_ns();
        enter(r, r->base_row, t);
        deaths(r, step, t);
        r->cursor = step;
        return D5_OK;
    }
    case D5_EVENT_AFTER_EXECUTOR:
        if (r->run_state != 1) return D5_OK;
        skip_to(r, nsteps, d5_memory_now_ns());
        r->run_state = 2;
        return D5_OK;
    default: return D5_OK;
    }
}

/* ---- Create ------------------------------------------------------------------------------- */

static d5_status plan_labels(d5_memory_recorder *r, const d5_executor *ex)
{
    int32_t nb = ex->nbufs;
    r->buf_label = d5_calloc((size_t)nb + 1, sizeof *r->buf_label, "memory recorder");
    r->buf_kind = d5_calloc((size_t)nb + 1, sizeof *r->buf_kind, "memory recorder");
    if (!r->buf_label || !r->buf_kind) return D5_ERR_NOMEM;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        const char *name = ex->net->values[v].name;
        if (x->buf >= 0 && x->buf < nb) {
            r->buf_label[x->buf] = name;
            r->buf_kind[x->buf] = D5_MEMORY_VALUE;
        }
        if (x->grad_buf >= 0 && x->grad_buf < nb) {
            r->buf_label[x->grad_buf] = name;
            r->buf_kind[x->grad_buf] = D5_MEMORY_GRADIENT;
        }
    }
    for (int32_t i = 0; i < ex->nnodes; i++) {
        const xnode *n = &ex->nodes[i];
        for (int32_t k = 0; n->scratch && k < n->nin; k++) {
            int32_t b = n->scratch[k];
            if (b < 0 || b >= nb || n->in[k] < 0) continue;
            r->buf_label[b] = ex->net->values[n->in[k]].name;
            r->buf_kind[b] = D5_MEMORY_SCRATCH;
        }
    }
    for (int32_t b = 0; b < nb; b++)
        if (!r->buf_label[b]) r->buf_label[b] = "";
    return D5_OK;
}

/* Buffers by the step at which they are born and die (compressed rows). */
static d5_status plan_steps(d5_memory_recorder *r, const d5_executor *ex)
{
    int32_t nsteps = 2 * ex->nnodes, nb = ex->nbufs;
    r->buf_bytes = d5_calloc((size_t)nb + 1, sizeof *r->buf_bytes, "memory recorder");
    r->buf_row = d5_calloc((size_t)nb + 1, sizeof *r->buf_row, "memory recorder");
    r->birth_start = d5_calloc((size_t)nsteps + 2, sizeof *r->birth_start, "memory recorder");
    r->death_start = d5_calloc((size_t)nsteps + 2, sizeof *r->death_start, "memory recorder");
    r->birth_buf = d5_calloc((size_t)nb + 1, sizeof *r->birth_buf, "memory recorder");
    r->death_buf = d5_calloc((size_t)nb + 1, sizeof *r->death_buf, "memory recorder");
    int32_t *fill = d5_calloc((size_t)nsteps + 2, sizeof *fill, "memory recorder");
    d5_status s = r->buf_bytes && r->buf_row && r->birth_start && r->death_start && r->birth_buf &&
                          r->death_buf && fill
                      ? D5_OK
                      : D5_ERR_NOMEM;
    for (int pass = 0; s == D5_OK && pass < 2; pass++) { /* 0: birth, 1: death */
        int32_t *start = pass ? r->death_start : r->birth_start;
        int32_t *list = pass ? r->death_buf : r->birth_buf;
        for (int32_t b = 0; b < nb; b++) {
            int32_t t = pass ? ex->bufs[b].last : ex->bufs[b].first;
            if (t == D5__STEP_END || nsteps == 0) continue; /* lives past the run */
            start[(t < 0 ? 0 : t >= nsteps ? nsteps - 1 : t) + 1]++;
        }
        for (int32_t t = 0; t < nsteps; t++) start[t + 1] += start[t];
        memset(fill, 0, ((size_t)nsteps + 2) * sizeof *fill);
        for (int32_t b = 0; b < nb; b++) {
            int32_t t = pass ? ex->bufs[b].last : ex->bufs[b].first;
            if (t == D5__STEP_END || nsteps == 0) continue;
            t = t < 0 ? 0 : t >= nsteps ? nsteps - 1 : t;
            list[start[t] + fill[t]++] = b;
            if (!pass) r->buf_row[b] = r->step_row[t];
        }
    }
    /* The profile is of host memory: buffers in a device's arena count 0 here
     * (d5_memory_plan.device_bytes has them). */
    for (int32_t b = 0; s == D5_OK && b < nb; b++)
        r->buf_bytes[b] = ex->bufs[b].mem ? 0 : (int64_t)ex->bufs[b].bytes;
    d5_free(fill);
    return s;
}

static d5_status rows(d5_memory_recorder *r, const d5_executor *ex)
{
    int32_t F = ex->nnodes;
    r->row_cap = 1 + 2 * F + D5__MEMORY_SECTIONS;
    r->rows = d5_calloc((size_t)r->row_cap, sizeof *r->rows, "memory recorder");
    r->fwd_row = d5_calloc((size_t)F + 1, sizeof *r->fwd_row, "memory recorder");
    r->bwd_row = d5_calloc((size_t)F + 1, sizeof *r->bwd_row, "memory recorder");
    r->step_row = d5_calloc(2 * (size_t)F + 1, sizeof *r->step_row, "memory recorder");
    if (!r->rows || !r->fwd_row || !r->bwd_row || !r->step_row) return D5_ERR_NOMEM;
    r->rows[0] = (d5__mrow){"outside nodes", "", "", D5_MEMORY_OTHER, -1};
    r->nrows = 1;
    for (int32_t i = 0; i < F; i++) {
        const xnode *n = &ex->nodes[i];
        const d5__node *nn = &ex->net->nodes[n->net_index];
        r->fwd_row[i] = r->bwd_row[i] = -1;
        if (!n->alias) {
            r->fwd_row[i] = r->nrows;
            r->rows[r->nrows++] =
                (d5__mrow){nn->name, nn->op_type, n->desc->backend, D5_MEMORY_FORWARD, i};
        }
    }
    for (int32_t i = F - 1; i >= 0; i--) { /* backward rows in the order they run */
        const xnode *n = &ex->nodes[i];
        const d5__node *nn = &ex->net->nodes[n->net_index];
        if (!ex->opt.backprop || !n->backward || n->alias) continue;
        r->bwd_row[i] = r->nrows;
        r->rows[r->nrows++] =
            (d5__mrow){nn->name, nn->op_type, n->desc->backend, D5_MEMORY_BACKWARD, i};
    }
    for (int32_t i = 0; i < F; i++) {
        r->step_row[i] = r->fwd_row[i];
        r->step_row[2 * F - 1 - i] = r->bwd_row[i];
    }
    r->node_rows = r->nrows;
    return D5_OK;
}

d5_status d5_memory_recorder_create(d5_executor *ex, const d5_timer *clock,
                                    d5_memory_recorder **out)
{
    if (!ex || !out) return d5_error(D5_ERR_INVALID, "d5_memory_recorder_create: NULL argument");
    d5_memory_recorder *r = d5_calloc(1, sizeof *r, "memory recorder");
    if (!r) return D5_ERR_NOMEM;
    r->ex = ex;
    r->clock = clock;
    r->nnodes = ex->nnodes;
    r->nbufs = ex->nbufs;
    d5_status s = rows(r, ex);
    if (s == D5_OK) s = plan_labels(r, ex);
    if (s == D5_OK) s = plan_steps(r, ex);
    if (s == D5_OK) {
        r->pev_cap = 2 * (int64_t)ex->nbufs + 2 * (int64_t)r->row_cap + 256;
        r->pev = d5_alloc((size_t)r->pev_cap * sizeof *r->pev, "memory recorder");
        if (!r->pev) s = D5_ERR_NOMEM;
    }
    if (s == D5_OK) s = d5_executor_add_handler(ex, on_event, r);
    if (s == D5_OK) r->attached = 1;
    if (s != D5_OK) {
        d5_memory_recorder_free(r);
        return s;
    }
    *out = r;
    return D5_OK;
}

void d5_memory_recorder_free(d5_memory_recorder *r)
{
    if (!r) return;
    if (r->recording) {
        d5_memory_scope_set(r->saved_scope);
        if (d5_memory_track_end(NULL) != D5_OK) d5_error_clear(); /* ended elsewhere */
    }
    if (r->attached) d5__executor_remove_handler(r->ex, on_event, r);
    d5_free(r->rows);
    d5_free(r->fwd_row);
    d5_free(r->bwd_row);
    d5_free(r->step_row);
    d5_free(r->buf_label);
    d5_free(r->buf_kind);
    d5_free(r->buf_bytes);
    d5_free(r->buf_row);
    d5_free(r->birth_start);
    d5_free(r->death_start);
    d5_free(r->birth_buf);
    d5_free(r->death_buf);
    d5_free(r->pev);
    d5_free(r->name);
    d5_free(r);
}

/* ---- Recording ---------------------------------------------------------------------------- */

d5_status d5_memory_recorder_begin(d5_memory_recorder *r, const char *name)
{
    if (!r) return d5_error(D5_ERR_INVALID, "d5_memory_recorder_begin: NULL recorder");
    if (r->recording) return d5_error(D5_ERR_STATE, "the memory recorder is recording already");
    char *copy = d5_strdup(name ? name : "", "memory recording name");
    if (!copy) return D5_ERR_NOMEM;
    d5_memory_track_params p = d5_memory_track_default_params();
    p.log = 1;
    p.clock = r->clock;
    d5_status s = d5_memory_track_begin(&p);
    if (s != D5_OK) {
        d5_free(copy);
        return s;
    }
    d5_free(r->name);
    r->name = copy; /* allocated before accounting began: not in the record */
    r->recording = 1;
    r->run_state = 0;
    r->runs = 0;
    r->cursor = -1;
    r->npev = 0;
    r->pev_dropped = 0;
    r->nrows = r->node_rows;
    r->base_row = 0;
    r->saved_scope = d5_memory_scope_get();
    r->begin_ns = d5_memory_now_ns();
    enter(r, 0, r->begin_ns);
    return D5_OK;
}

d5_status d5_memory_recorder_section(d5_memory_recorder *r, int32_t phase, const char *name)
{
    if (!r || !r->recording)
        return d5_error(D5_ERR_STATE, "d5_memory_recorder_section: not recording");
    int32_t row = 0;
    if (name) {
        row = r->node_rows;
        while (row < r->nrows &&
               (r->rows[row].phase != phase || strcmp(r->rows[row].name, name) != 0))
            row++;
        if (row == r->nrows) {
            if (r->nrows == r->row_cap)
                return d5_error(D5_ERR_RANGE, "memory recorder: more than %d sections",
                                D5__MEMORY_SECTIONS);
            int32_t k = r->nrows - r->node_rows;
            snprintf(r->section_names[k], sizeof r->section_names[k], "%s", name);
            r->rows[r->nrows++] = (d5__mrow){r->section_names[k], "", "", phase, -1};
        }
    }
    r->base_row = row;
    enter(r, row, d5_memory_now_ns());
    return D5_OK;
}

d5_status d5_memory_recorder_end(d5_memory_recorder *r, d5_memory_profile *out)
{
    if (!r || !out) return d5_error(D5_ERR_INVALID, "d5_memory_recorder_end: NULL argument");
    memset(out, 0, sizeof *out);
    if (!r->recording) return d5_error(D5_ERR_STATE, "d5_memory_recorder_end: not recording");
    d5_memory_scope_set(r->saved_scope);
    r->recording = 0;
    d5_memory_log log;
    d5_status s = d5_memory_track_end(&log);
    if (s != D5_OK) return s;
    s = d5__memory_build(r, &log, out);
    d5_memory_log_free(&log);
    if (s != D5_OK) d5_memory_profile_free(out);
    return s;
}

d5_status d5_executor_record_memory(d5_executor *ex, int32_t backprop, const d5_timer *clock,
                                    const char *name, d5_memory_profile *out)
{
    if (!ex || !out) return d5_error(D5_ERR_INVALID, "d5_executor_record_memory: NULL argument");
    memset(out, 0, sizeof *out);
    d5_memory_recorder *r = NULL;
    d5_status s = d5_memory_recorder_create(ex, clock, &r);
    if (s == D5_OK) s = d5_memory_recorder_begin(r, name);
    if (s == D5_OK) {
        d5_status run =
            backprop ? d5_executor_inference_and_backprop(ex) : d5_executor_inference(ex);
        s = d5_memory_recorder_end(r, out);
        if (run != D5_OK) {
            d5_memory_profile_free(out);
            s = run;
        }
    }
    d5_memory_recorder_free(r);
    return s;
}
