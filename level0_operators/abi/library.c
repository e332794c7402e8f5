/* Custom operators from shared objects, loaded with dlopen. */
#define _GNU_SOURCE
#include "abi.h"
#include "d5/operator.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct d5_op_library {
    void *handle;
    const d5_op_desc *const *ops;
    int32_t count;
    const d5_device_memory *memory; /* NULL: host memory */
};

void d5__op_abi_mismatch(uint32_t found, char *buf, size_t size)
{
    if (found > D5_OP_ABI_VERSION)
        snprintf(buf, size,
                 "built against operator ABI %u, newer than the ABI %u this d5 loads: rebuild it "
                 "against this d5's include/d5/operator.h, or use the d5 it was written for",
                 found, D5_OP_ABI_VERSION);
    else
        snprintf(buf, size,
                 "built against operator ABI %u; d5 loads ABI %u: rebuild it against this d5's "
                 "include/d5/operator.h ('d5 compile-op' does)%s",
                 found, D5_OP_ABI_VERSION,
                 found == 1 ? "; ABI 2 passes create, forward and backward one struct "
                              "(d5_op_create_args, d5_op_call) in place of separate arguments, "
                              "see docs/level0.md"
                            : "");
}

/* The optional device memory of a library (D5_DEVICE_MEMORY_EXPORT): NULL
 * without the symbol; an error for another ABI or an incomplete table. */
static d5_status read_memory(void *h, const char *path, const d5_device_memory **out)
{
    *out = NULL;
    void *sym = dlsym(h, D5_DEVICE_MEMORY_SYMBOL);
    if (!sym) return D5_OK;
    d5_device_memory_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    uint32_t abi = 0;
    const d5_device_memory *m = entry(&abi);
    if (abi != D5_OP_ABI_VERSION) {
        char why[320];
        d5__op_abi_mismatch(abi, why, sizeof why);
        return d5_error(D5_ERR_UNSUPPORTED, "'%s': its device memory was %s", path, why);
    }
    if (!m || !m->name || !m->alloc || !m->free || !m->to_device || !m->to_host || !m->sync ||
        !m->add || !m->fill)
        return d5_error(D5_ERR_FORMAT,
                        "'%s': %s returned an incomplete table (it needs a name, alloc, free, "
                        "to_device, to_host, sync, add and fill)",
                        path, D5_DEVICE_MEMORY_SYMBOL);
    *out = m;
    return D5_OK;
}

d5_status d5_op_library_open(const char *path, d5_op_library **out)
{
    if (!path || !out) return d5_error(D5_ERR_INVALID, "d5_op_library_open: NULL argument");
    /* dlopen searches the library path for a bare name: make a relative path explicit. */
    char buf[4096];
    const char *p = path;
    if (!strchr(path, '/')) {
        snprintf(buf, sizeof buf, "./%s", path);
        p = buf;
    }
    void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) return d5_error(D5_ERR_IO, "cannot load operator library '%s': %s", path, dlerror());
    d5_op_entry_fn entry;
    void *sym = dlsym(h, D5_OP_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(h);
        return d5_error(D5_ERR_NOTFOUND,
                        "'%s' exports no %s symbol: define its operators with D5_OPERATOR_EXPORT",
                        path, D5_OP_ENTRY_SYMBOL);
    }
    memcpy(&entry, &sym, sizeof entry);
    int32_t count = 0;
    uint32_t abi = 0;
    const d5_op_desc *const *ops = entry(&count, &abi);
    /* The versions first, and nothing else from a table of another ABI, whose
     * layout may differ; all is read before dlclose unmaps it. */
    if (abi != D5_OP_ABI_VERSION) {
        dlclose(h);
        char why[320];
        d5__op_abi_mismatch(abi, why, sizeof why);
        return d5_error(D5_ERR_UNSUPPORTED, "operator library '%s' was %s", path, why);
    }
    if (count < 0 || count > 100000 || (count > 0 && !ops)) {
        dlclose(h);
        return d5_error(D5_ERR_FORMAT,
                        "'%s': %s returned %s with a count of %d: expected a list of 0 to 100000 "
                        "operators",
                        path, D5_OP_ENTRY_SYMBOL, ops ? "a list" : "no list", (int)count);
    }
    for (int32_t i = 0; i < count; i++) {
        uint32_t v = ops[i] ? ops[i]->abi_version : 0;
        if (ops[i] && v != D5_OP_ABI_VERSION) {
            dlclose(h);
            char why[320];
            d5__op_abi_mismatch(v, why, sizeof why);
            return d5_error(D5_ERR_UNSUPPORTED, "'%s': operator %d was %s", path, (int)i, why);
        }
        if (!ops[i] || !ops[i]->name || !ops[i]->create || !ops[i]->forward) {
            dlclose(h);
            return d5_error(D5_ERR_FORMAT,
                            "'%s': operator %d is incomplete (no table, name, create or forward)",
                            path, (int)i);
        }
    }
    const d5_device_memory *memory = NULL;
    d5_status s = read_memory(h, path, &memory);
    if (s != D5_OK) {
        dlclose(h);
        return s;
    }
    d5_op_library *lib = d5_calloc(1, sizeof *lib, "operator library");
    if (!lib) {
        dlclose(h);
        return D5_ERR_NOMEM;
    }
    lib->memory = memory;
    lib->handle = h;
    lib->ops = ops;
    lib->count = count;
    *out = lib;
    return D5_OK;
}

void d5_op_library_close(d5_op_library *lib)
{
    if (!lib) return;
    dlclose(lib->handle);
    d5_free(lib);
}

int32_t d5_op_library_count(const d5_op_library *lib)
{
    return lib ? lib->count : 0;
}

const d5_device_memory *d5_op_library_memory(const d5_op_library *lib)
{
    return lib ? lib->memory : NULL;
}

const d5_op_desc *d5_op_library_at(const d5_op_library *lib, int32_t i)
{
    return lib && i >= 0 && i < lib->count ? lib->ops[i] : NULL;
}

d5_status d5_op_library_find(const d5_op_library *lib, const char *name, const d5_op_desc **out)
{
    if (!lib || !name || !out) return d5_error(D5_ERR_INVALID, "d5_op_library_find: NULL argument");
    for (int32_t i = 0; i < lib->count; i++)
        if (strcmp(lib->ops[i]->name, name) == 0) {
            *out = lib->ops[i];
            return D5_OK;
        }
    char names[512] = "";
    size_t used = 0;
    for (int32_t i = 0; i < lib->count && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                 lib->ops[i]->name);
    return d5_error(D5_ERR_NOTFOUND, "operator library has no operator '%s' (it has: %s)", name,
                    lib->count ? names : "none");
}
