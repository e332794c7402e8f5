/* ssp: stale-synchronous parallel. The server of asgd, except that a worker
 * that has pushed more than `staleness` steps beyond the slowest unfinished
 * worker gets its weights only once the slowest catches up: no worker runs
 * more than `staleness` steps ahead. The largest lead seen is reported. */
#include "dist_internal.h"

static d5_status serve(d5_dist *d)
{
    return d5__ps_serve_async(d, d->p.staleness);
}

/* clang-format off */
const d5__scheme d5__scheme_ssp = {
    .name = "ssp",
    .description = "stale-synchronous parameter server: at most --staleness steps ahead",
    .servers = 2, .after_backward = d5__ps_exchange, .done = d5__ps_done, .serve = serve};
/* clang-format on */
