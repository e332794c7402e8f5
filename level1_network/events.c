/* Executor events and the region timer that attaches through them. With no
 * handler the executor skips events entirely, so they cost nothing unless
 * used. */
#include "executor_internal.h"

#include <stdio.h>
#include <string.h>

d5_status d5_executor_add_handler(d5_executor *ex, d5_event_fn fn, void *user)
{
    if (!fn) return d5_error(D5_ERR_INVALID, "d5_executor_add_handler: no function");
    xhandler *h = d5_realloc(ex->handlers, (size_t)ex->nhandlers * sizeof *h,
                             (size_t)(ex->nhandlers + 1) * sizeof *h, "event handlers");
    if (!h) return D5_ERR_NOMEM;
    ex->handlers = h;
    h[ex->nhandlers].fn = fn;
    h[ex->nhandlers].user = user;
    ex->nhandlers++;
    return D5_OK;
}

d5_status d5__emit(d5_executor *ex, int32_t event, int32_t phase, int32_t node)
{
    d5_event_info info = {event, phase, node, NULL, NULL, NULL, -1, NULL, 0};
    if (node >= 0) {
        const xnode *n = &ex->nodes[node];
        const d5__node *nn = &ex->net->nodes[n->net_index];
        info.node_name = nn->name;
        info.op_type = nn->op_type;
        info.backend = n->desc->backend;
    }
    for (int32_t i = 0; i < ex->nhandlers; i++) {
        d5_status s = ex->handlers[i].fn(ex->handlers[i].user, &info);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5__emit_copy(d5_executor *ex, int32_t event, int32_t copy)
{
    const xcopy *c = &ex->copies[copy];
    d5_event_info info = {
        event,   D5_PHASE_FORWARD, c->node, NULL, NULL, NULL, copy, ex->net->values[c->value].name,
        c->bytes};
    for (int32_t i = 0; i < ex->nhandlers; i++) {
        d5_status s = ex->handlers[i].fn(ex->handlers[i].user, &info);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* ---- The region timer ----------------------------------------------------------------------- */

typedef struct xtimer {
    d5_timer *timer;
    d5_timer_id forward, backward;
    d5_timer_id *fwd, *bwd; /* per scheduled node */
    d5_timer_id *copy;      /* per copy */
    int in_backward;
} xtimer;

/* FORWARD spans the forward pass, BACKWARD from the first backward node to the
 * end of backprop; every node has its own key. */
static d5_status on_event(void *user, const d5_event_info *e)
{
    xtimer *t = user;
    int back = e->phase == D5_PHASE_BACKWARD;
    d5_status s = D5_OK;
    switch (e->event) {
    case D5_EVENT_BEFORE_EXECUTOR: return d5_timer_start_id(t->timer, t->forward);
    case D5_EVENT_AFTER_INFERENCE: return d5_timer_end_id(t->timer, t->forward);
    case D5_EVENT_BEFORE_NODE:
        if (back && !t->in_backward) {
            t->in_backward = 1;
            s = d5_timer_start_id(t->timer, t->backward);
        }
        return s == D5_OK ? d5_timer_start_id(t->timer, back ? t->bwd[e->node] : t->fwd[e->node])
                          : s;
    case D5_EVENT_AFTER_NODE:
        return d5_timer_end_id(t->timer, back ? t->bwd[e->node] : t->fwd[e->node]);
    case D5_EVENT_BEFORE_COPY: return d5_timer_start_id(t->timer, t->copy[e->copy]);
    case D5_EVENT_AFTER_COPY: return d5_timer_end_id(t->timer, t->copy[e->copy]);
    case D5_EVENT_AFTER_BACKPROP:
        if (!t->in_backward) return D5_OK;
        t->in_backward = 0;
        return d5_timer_end_id(t->timer, t->backward);
    default: return D5_OK;
    }
}

void d5__timer_detach(d5_executor *ex)
{
    if (!ex->timer) return;
    d5_free(ex->timer->fwd);
    d5_free(ex->timer->bwd);
    d5_free(ex->timer->copy);
    d5_free(ex->timer);
    ex->timer = NULL;
}

d5_status d5_executor_attach_timer(d5_executor *ex, d5_timer *timer)
{
    if (ex->timer) return d5_error(D5_ERR_STATE, "the executor already has a timer");
    xtimer *t = d5_calloc(1, sizeof *t, "executor timer");
    if (!t) return D5_ERR_NOMEM;
    ex->timer = t;
    t->timer = timer;
    t->fwd = d5_calloc((size_t)ex->nnodes + 1, sizeof *t->fwd, "executor timer");
    t->bwd = d5_calloc((size_t)ex->nnodes + 1, sizeof *t->bwd, "executor timer");
    t->copy = d5_calloc((size_t)ex->ncopies + 1, sizeof *t->copy, "executor timer");
    if (!t->fwd || !t->bwd || !t->copy) return D5_ERR_NOMEM;
    d5_status s = d5_timer_key(timer, "FORWARD", &t->forward);
    if (s == D5_OK) s = d5_timer_key(timer, "BACKWARD", &t->backward);
    char key[256];
    for (int32_t i = 0; i < ex->nnodes && s == D5_OK; i++) {
        const char *name = ex->net->nodes[ex->nodes[i].net_index].name;
        s = d5_timer_key(timer, name, &t->fwd[i]);
        snprintf(key, sizeof key, "%s/backward", name);
        if (s == D5_OK) s = d5_timer_key(timer, key, &t->bwd[i]);
    }
    for (int32_t c = 0; c < ex->ncopies && s == D5_OK; c++) {
        const xcopy *x = &ex->copies[c];
        snprintf(key, sizeof key, "copy %s to %s", ex->net->values[x->value].name,
                 x->to ? ex->devs[x->to]->name : "host");
        s = d5_timer_key(timer, key, &t->copy[c]);
    }
    return s == D5_OK ? d5_executor_add_handler(ex, on_event, t) : s;
}
