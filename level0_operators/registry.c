/* The registry of built-in operators, generated from ops.def. */
#include "d5/operator.h"
#include "d5/precision.h"

#include <stdio.h>
#include <string.h>

/* The tables of the operators built into this library, and the function of
 * each plugin backend that finds one of its operators (<backend>_plugin.c). */
#define D5_OP(NAME, BACKEND)        extern const d5_op_desc d5__op_##BACKEND##_##NAME;
#define D5_PLUGIN_OP(NAME, BACKEND) const d5_op_desc *d5__##BACKEND##_plugin_op(const char *name);
#include "ops.def"
#undef D5_OP
#undef D5_PLUGIN_OP

/* One row of ops.def. An operator of a plugin (D5_PLUGIN_OP) has no table
 * here: its backend's d5__<backend>_plugin_op gives it, loading the plugin,
 * so that nothing loads it before one of its operators is asked for; until
 * then the row's names stand for the table's. */
typedef struct op_row {
    const char *name, *backend; /* of a D5_PLUGIN_OP row */
    const d5_op_desc *desc;     /* of a D5_OP row */
    const d5_op_desc *(*plugin_op)(const char *name);
} op_row;

static const op_row table[] = {
#define D5_OP(NAME, BACKEND)        {NULL, NULL, &d5__op_##BACKEND##_##NAME, NULL},
#define D5_PLUGIN_OP(NAME, BACKEND) {#NAME, #BACKEND, NULL, d5__##BACKEND##_plugin_op},
#include "ops.def"
#undef D5_OP
#undef D5_PLUGIN_OP
};

#define NOPS (sizeof table / sizeof table[0])

static const d5_op_desc *desc_of(const op_row *r)
{
    return r->desc ? r->desc : r->plugin_op(r->name);
}

static const char *name_of(const op_row *r)
{
    return r->desc ? r->desc->name : r->name;
}

static const char *backend_of(const op_row *r)
{
    return r->desc ? r->desc->backend : r->backend;
}

size_t d5_op_count(void)
{
    return NOPS;
}

const d5_op_desc *d5_op_at(size_t i)
{
    return i < NOPS ? desc_of(&table[i]) : NULL;
}

const char *d5__op_backend_at(size_t i);

/* The backend of row i without loading a plugin (backends.c). */
const char *d5__op_backend_at(size_t i)
{
    return i < NOPS ? backend_of(&table[i]) : NULL;
}

int d5__backend_check(const char *backend, char *why, size_t why_size); /* backends.c */

int d5_backend_available(const char *backend, char *why, size_t why_size)
{
    return d5__backend_check(backend, why, why_size);
}

d5_status d5_op_find(const char *name, const char *backend, const d5_op_desc **out)
{
    if (!name || !backend || !out) return d5_error(D5_ERR_INVALID, "d5_op_find: NULL argument");
    char have[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < NOPS; i++) {
        if (strcmp(name_of(&table[i]), name) != 0) continue;
        if (strcmp(backend_of(&table[i]), backend) == 0) {
            char why[256];
            if (!d5__backend_check(backend, why, sizeof why))
                return d5_error(D5_ERR_NODEVICE, "operator %s: backend %s is unavailable: %s", name,
                                backend, why);
            *out = desc_of(&table[i]);
            return D5_OK;
        }
        if (used < sizeof have)
            used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "",
                                     backend_of(&table[i]));
    }
    if (used)
        return d5_error(D5_ERR_UNSUPPORTED, "operator %s has no %s backend (it has: %s)", name,
                        backend, have);
    return d5_error(D5_ERR_UNSUPPORTED, "d5 has no operator %s (see 'd5 test-operator --list')",
                    name);
}

/* ---- Default test cases (D5_OP_CASE rows of ops.def) ---- */

static const struct {
    const char *op, *spec;
} cases[] = {
#define D5_OP(NAME, BACKEND)
#define D5_PLUGIN_OP(NAME, BACKEND)
#define D5_OP_CASE(NAME, SPEC) {#NAME, SPEC},
#include "ops.def"
#undef D5_OP_CASE
#undef D5_PLUGIN_OP
#undef D5_OP
};

size_t d5_op_cases(const char *name, const char **specs, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; name && i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].op, name) != 0) continue;
        if (n < max) specs[n] = cases[i].spec;
        n++;
    }
    return n;
}

/* ---- Operator properties (meta.def) ---- */

static const struct {
    const char *op;
    d5_op_meta meta;
} metas[] = {
#define D5_OP_META(NAME, VIEW, FIRST, LAST) {#NAME, {VIEW, FIRST, LAST}},
#include "meta.def"
#undef D5_OP_META
};

void d5_op_meta_get(const char *op_type, d5_op_meta *out)
{
    *out = (d5_op_meta){0, -1, -1};
    for (size_t i = 0; op_type && i < sizeof metas / sizeof metas[0]; i++)
        if (strcmp(metas[i].op, op_type) == 0) {
            *out = metas[i].meta;
            return;
        }
}

/* ---- Device memory ---------------------------------------------------------------------- */

d5_status d5__device_memory_of(const char *backend, const d5_device_memory **out); /* device.h */

d5_status d5_backend_memory(const char *backend, const d5_device_memory **out)
{
    if (!backend || !out) return d5_error(D5_ERR_INVALID, "d5_backend_memory: NULL argument");
    *out = NULL;
    d5_backend_info info;
    d5_status s = d5_backend_find(backend, &info);
    if (s != D5_OK || info.device_operators == 0) return s;
    if (!info.available)
        return d5_error(D5_ERR_NODEVICE, "backend '%s' is unavailable here: %s", info.name,
                        info.reason);
    return d5__device_memory_of(info.name, out);
}

const char *d5_gpu_peak_name(int kind)
{
    static const char *const names[D5_GPU_PEAK_KINDS] = {"FP32", "TF32", "BF16",
                                                         "FP16", "FP8",  "INT8"};
    return kind >= 0 && kind < D5_GPU_PEAK_KINDS ? names[kind] : "?";
}
