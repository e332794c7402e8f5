/* The cuda backend of a build with the CUDA toolkit and cuDNN: its probe, its
 * operator tables and device memory (device.h) come from the cuda plugin,
 * loaded the first time one of them is asked for (cuda_plugin.h), so that d5
 * starts without the CUDA libraries and runs where they are missing. */
#include "../core/plugin.h"
#include "cuda_plugin.h"
#include "device.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int d5__cuda_backend_check(char *why, size_t why_size);

static d5_status load(const d5__cuda_plugin **out, char *why, size_t why_size)
{
    const void *t;
    d5_status s = d5__plugin_load(D5__CUDA_PLUGIN, &t, why, why_size);
    *out = t;
    return s;
}

/* The plugin's table; the reason, naming `what`, when it does not load. */
static d5_status need(const char *what, const d5__cuda_plugin **p)
{
    char why[384];
    d5_status s = load(p, why, sizeof why);
    return s == D5_OK ? D5_OK : d5_error(s, "%s: %s", what, why);
}

/* The backend's probe (backends.def): the plugin loads and finds a device. */
int d5__cuda_backend_check(char *why, size_t why_size)
{
    const d5__cuda_plugin *p;
    if (load(&p, why, why_size) != D5_OK) return 0;
    return p->probe(why, why_size);
}

/* ---- Operator tables ---- */

/* Stands in for an operator of a plugin that does not load. */
static d5_status unavailable_create(const d5_op_create_args *args, void **state)
{
    (void)args;
    (void)state;
    const d5__cuda_plugin *p;
    char why[384];
    d5_status s = load(&p, why, sizeof why);
    return d5_error(s == D5_OK ? D5_ERR_BACKEND : s, "cuda backend: %s",
                    s == D5_OK ? "the plugin lacks this operator" : why);
}

static d5_status unavailable_forward(void *state, const d5_op_call *call)
{
    (void)call;
    (void)state;
    return d5_error(D5_ERR_BACKEND, "cuda backend: operator not created");
}

static const d5_op_desc stand_ins[] = {
#define D5_PLUGIN_OP(NAME, BACKEND)                                                                \
    {.abi_version = D5_OP_ABI_VERSION,                                                             \
     .flags = D5_OP_CUDA,                                                                          \
     .name = #NAME,                                                                                \
     .backend = #BACKEND,                                                                          \
     .max_inputs = INT32_MAX,                                                                      \
     .min_outputs = 1,                                                                             \
     .max_outputs = INT32_MAX,                                                                     \
     .create = unavailable_create,                                                                 \
     .forward = unavailable_forward},
#include "cuda/ops_cuda.def"
#undef D5_PLUGIN_OP
};

const d5_op_desc *d5__cuda_plugin_op(const char *name)
{
    const d5__cuda_plugin *p;
    char why[8];
    if (load(&p, why, sizeof why) == D5_OK)
        for (size_t i = 0; i < p->nops; i++)
            if (strcmp(p->ops[i]->name, name) == 0) return p->ops[i];
    for (size_t i = 0; i < sizeof stand_ins / sizeof stand_ins[0]; i++)
        if (strcmp(stand_ins[i].name, name) == 0) return &stand_ins[i];
    return NULL; /* not a row of ops_cuda.def: registry.c never asks */
}

/* ---- Device memory (device.h) ---- */

static const char *const WHAT = "device memory";

d5_status d5__cuda_tensor_alloc(const d5_tensor_desc *d, d5_tensor *dev)
{
    const d5__cuda_plugin *p;
    d5_status s = need(WHAT, &p);
    return s == D5_OK ? p->tensor_alloc(d, dev) : s;
}

d5_status d5__cuda_tensor_upload(const d5_tensor *host, d5_tensor *dev)
{
    const d5__cuda_plugin *p;
    d5_status s = need(WHAT, &p);
    return s == D5_OK ? p->tensor_upload(host, dev) : s;
}

d5_status d5__cuda_tensor_download(const d5_tensor *dev, d5_tensor *host)
{
    const d5__cuda_plugin *p;
    d5_status s = need(WHAT, &p);
    return s == D5_OK ? p->tensor_download(dev, host) : s;
}

/* A device tensor exists only where the plugin loaded. */
void d5__cuda_tensor_free(d5_tensor *dev)
{
    const d5__cuda_plugin *p;
    char why[8];
    if (dev && dev->data && load(&p, why, sizeof why) == D5_OK) p->tensor_free(dev);
}

d5_status d5__cuda_sync(void)
{
    const d5__cuda_plugin *p;
    d5_status s = need(WHAT, &p);
    return s == D5_OK ? p->sync() : s;
}

d5_status d5__device_memory_of(const char *backend, const d5_device_memory **out)
{
    *out = NULL;
    if (strcmp(backend, "cuda") != 0)
        return d5_error(D5_ERR_UNSUPPORTED, "backend '%s' has no device memory", backend);
    const d5__cuda_plugin *p;
    d5_status s = need(WHAT, &p);
    if (s == D5_OK) *out = p->memory;
    return s;
}

d5_status d5_gpu_peaks_measure(int32_t size, double max_time_s, d5_gpu_peaks *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_gpu_peaks_measure: NULL argument");
    memset(out, 0, sizeof *out);
    if (size < 256 || size > 32768)
        return d5_error(D5_ERR_INVALID, "d5_gpu_peaks_measure: size %d outside 256..32768",
                        (int)size);
    const d5__cuda_plugin *p;
    d5_status s = need("GPU peaks", &p);
    if (s == D5_OK) {
        char why[256];
        if (!p->probe(why, sizeof why)) return d5_error(D5_ERR_NODEVICE, "GPU peaks: %s", why);
        s = p->peaks(size, max_time_s > 0 ? max_time_s : 0.5, out);
    }
    return s;
}
