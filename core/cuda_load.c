/* The CUDA-event clock and the CUDA device query of a build with the CUDA
 * toolkit: both live in the cudart plugin, loaded the first time either is
 * asked for (cudart_plugin.h), so that d5 starts without the CUDA runtime. */
#include "cudart_plugin.h"
#include "plugin.h"

#include <stdatomic.h>
#include <stdio.h>

void d5__cuda_query(d5_machine_info *m);

/* Set once a clock exists: its other functions need no loading. */
static _Atomic(const d5__cudart_plugin *) clock_table;

static d5_status load(const d5__cudart_plugin **out, char *why, size_t why_size)
{
    const void *t;
    d5_status s = d5__plugin_load(D5__CUDART_PLUGIN, &t, why, why_size);
    *out = t;
    return s;
}

void d5__cuda_query(d5_machine_info *m)
{
    m->cuda_built = 1;
    m->cuda_device_count = 0;
    const d5__cudart_plugin *p;
    char why[200]; /* with its prefix, within cuda_status */
    d5_status s = load(&p, why, sizeof why);
    if (s != D5_OK) {
        snprintf(m->cuda_status, sizeof m->cuda_status, "%s: %s",
                 s == D5_ERR_NODEVICE ? "no CUDA device" : "CUDA unavailable", why);
        return;
    }
    p->query(m);
}

d5_status d5__cuda_clock_create(void *stream, d5__cuda_clock **out)
{
    const d5__cudart_plugin *p;
    char why[384];
    d5_status s = load(&p, why, sizeof why);
    if (s != D5_OK) return d5_error(s, "CUDA-event timing: %s", why);
    s = p->clock_create(stream, out);
    if (s == D5_OK) atomic_store(&clock_table, p);
    return s;
}

void d5__cuda_clock_free(d5__cuda_clock *c)
{
    if (c) atomic_load(&clock_table)->clock_free(c);
}

d5_status d5__cuda_clock_record(d5__cuda_clock *c, uint32_t *event)
{
    return atomic_load(&clock_table)->clock_record(c, event);
}

d5_status d5__cuda_clock_elapsed_ns(d5__cuda_clock *c, uint32_t from, uint32_t to, double *ns)
{
    return atomic_load(&clock_table)->clock_elapsed_ns(c, from, to, ns);
}

void d5__cuda_clock_release(d5__cuda_clock *c, uint32_t event)
{
    atomic_load(&clock_table)->clock_release(c, event);
}
