/* mavg: local steps, the workers' models averaged (allreduce of the
 * parameters, divided by the workers) every average_every steps, at each
 * epoch's end and after the last step. */
#include "dist_internal.h"

typedef struct mavg_state {
    int64_t last; /* step of the last average */
} mavg_state;

static d5_status setup(d5_dist *d)
{
    return d5__dist_new_state(d, sizeof(mavg_state), "mavg") ? D5_OK : D5_ERR_NOMEM;
}

static d5_status after_update(d5_dist *d, int64_t step)
{
    mavg_state *m = d->state;
    int at_epoch = d->p.epoch_steps > 0 && step % d->p.epoch_steps == 0;
    if (step % d->p.average_every != 0 && !at_epoch) return D5_OK;
    m->last = step;
    return d5__dist_average_models(d, "model average");
}

static d5_status finish(d5_dist *d)
{
    mavg_state *m = d->state;
    if (m && m->last == d->steps) return D5_OK;
    return d5__dist_average_models(d, "model average");
}

/* clang-format off */
const d5__scheme d5__scheme_mavg = {
    .name = "mavg", .description = "local steps, models averaged every --average-every steps",
    .consistent = 0, .synchronous = 1, .setup = setup, .after_update = after_update,
    .finish = finish};
/* clang-format on */
