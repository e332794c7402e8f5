/* pssgd: a synchronous parameter server. Every worker's gradient (rank 0's
 * included) is summed, in worker order, and divided by the workers; the
 * server applies the optimizer once and every worker takes its weights.
 * Without server ranks rank 0 serves as well as trains; with --servers N the
 * last N ranks hold the parameters, spread over them in whole tensors. */
#include "dist_internal.h"

static d5_status after_backward(d5_dist *d, int64_t step)
{
    if (d->servers == 0 && d->rank == 0) return d5__ps_root_gather(d, step);
    return d5__ps_exchange(d, step);
}

static d5_status after_update(d5_dist *d, int64_t step)
{
    (void)step;
    return d->servers == 0 && d->rank == 0 ? d5__ps_root_scatter(d) : D5_OK;
}

/* clang-format off */
const d5__scheme d5__scheme_pssgd = {
    .name = "pssgd",
    .description = "synchronous parameter server (rank 0, or --servers N dedicated ranks)",
    .consistent = 1, .synchronous = 1, .servers = 1, .after_backward = after_backward,
    .after_update = after_update, .done = d5__ps_done, .serve = d5__ps_serve_sync};
/* clang-format on */
