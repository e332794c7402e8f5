/* asgd: an asynchronous parameter server on dedicated ranks. A worker pushes
 * its gradient and pulls the weights; the server applies each gradient as it
 * comes (probing for pushes from any worker), so a gradient may have been
 * computed on weights some updates old: the staleness histogram. */
#include "dist_internal.h"

static d5_status serve(d5_dist *d)
{
    return d5__ps_serve_async(d, -1);
}

/* clang-format off */
const d5__scheme d5__scheme_asgd = {
    .name = "asgd", .description = "asynchronous parameter server on --servers N dedicated ranks",
    .servers = 2, .after_backward = d5__ps_exchange, .done = d5__ps_done, .serve = serve};
/* clang-format on */
