/* The backend registry: every backend of backends.def, whether it can run
 * here, its operators (counted from the operator registry), and the checks of
 * backend lists given by users. */
#include "d5/operator.h"

#include <stdio.h>
#include <string.h>

int d5__backend_check(const char *backend, char *why, size_t why_size);
int d5__backend_always(char *why, size_t why_size);
const char *d5__op_backend_at(size_t i); /* registry.c */

/* The probes: in each backend's folder, and in its none/ folder for a build
 * without it (level0_operators/CMakeLists.txt). */
#define D5_BACKEND(NAME, PROBE, DTYPES, DESC) int PROBE(char *why, size_t why_size);
#include "backends.def"
#undef D5_BACKEND

int d5__backend_always(char *why, size_t why_size)
{
    (void)why;
    (void)why_size;
    return 1;
}

typedef struct backend_row {
    const char *name;
    int (*probe)(char *why, size_t why_size);
    const char *dtypes, *description;
} backend_row;

static const backend_row table[] = {
#define D5_BACKEND(NAME, PROBE, DTYPES, DESC) {#NAME, PROBE, DTYPES, DESC},
#include "backends.def"
#undef D5_BACKEND
};

#define NBACKENDS (sizeof table / sizeof table[0])

/* The default preference of the executor: the one place it is written. */
static const char default_list[] = "dnnl,blas,ref";

/* The row of a name given with its length (an item of a list), or NULL. */
static const backend_row *lookup(const char *name, size_t len)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strlen(table[i].name) == len && strncmp(table[i].name, name, len) == 0)
            return &table[i];
    return NULL;
}

static int probe(const backend_row *r, char *why, size_t why_size)
{
    why[0] = '\0';
    int ok = r->probe(why, why_size);
    if (ok) why[0] = '\0';
    return ok;
}

/* "ref, blas, dnnl, cuda": every backend, or those available here. */
static void name_list(int only_available, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS; i++) {
        char why[8];
        if (only_available && !probe(&table[i], why, sizeof why)) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", table[i].name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
    if (only_available && !used) snprintf(buf, size, "none");
}

/* " (backends: ...; available here: ...)" for the errors below. */
static void choices(char *buf, size_t size)
{
    char all[256], here[256];
    name_list(0, all, sizeof all);
    name_list(1, here, sizeof here);
    snprintf(buf, size, "(backends: %s; available here: %s)", all, here);
}

size_t d5_backend_count(void)
{
    return NBACKENDS;
}

static void fill_info(const backend_row *r, d5_backend_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = r->name;
    out->description = r->description;
    out->dtypes = r->dtypes;
    out->available = probe(r, out->reason, sizeof out->reason);
    for (size_t i = 0; i < d5_op_count(); i++) {
        if (strcmp(d5__op_backend_at(i), r->name) != 0) continue;
        const d5_op_desc *d = d5_op_at(i);
        out->operators++;
        if (d->flags & D5_OP_CUDA) out->device_operators++;
    }
}

d5_status d5_backend_at(size_t i, d5_backend_info *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_backend_at: NULL argument");
    if (i >= NBACKENDS) return d5_error(D5_ERR_RANGE, "backend %zu of %zu", i, (size_t)NBACKENDS);
    fill_info(&table[i], out);
    return D5_OK;
}

const char *d5_backend_name(size_t i)
{
    return i < NBACKENDS ? table[i].name : NULL;
}

d5_status d5_backend_find(const char *name, d5_backend_info *out)
{
    if (!name || !out) return d5_error(D5_ERR_INVALID, "d5_backend_find: NULL argument");
    const backend_row *r = lookup(name, strlen(name));
    if (!r) {
        char c[600];
        choices(c, sizeof c);
        return d5_error(D5_ERR_UNSUPPORTED, "unknown backend '%.64s' %s", name, c);
    }
    fill_info(r, out);
    return D5_OK;
}

const char *d5_backend_default_list(void)
{
    return default_list;
}

/* Checks the item p[0..len-1] of `list`. */
static d5_status check_item(const char *list, const char *p, size_t len, int32_t allow_auto)
{
    char c[600];
    if (len == 4 && strncmp(p, "auto", 4) == 0) {
        if (!allow_auto) {
            choices(c, sizeof c);
            return d5_error(D5_ERR_INVALID, "'auto' is not accepted here; name backends %s", c);
        }
        if (strcmp(list, "auto") != 0)
            return d5_error(D5_ERR_INVALID,
                            "'auto' stands alone (it measures every backend of each node), not "
                            "in the list '%.200s'",
                            list);
        return D5_OK;
    }
    const backend_row *r = lookup(p, len);
    if (!r) {
        choices(c, sizeof c);
        return d5_error(D5_ERR_UNSUPPORTED, "unknown backend '%.*s' %s", len > 64 ? 64 : (int)len,
                        p, c);
    }
    char why[256];
    if (!probe(r, why, sizeof why)) {
        char here[256];
        name_list(1, here, sizeof here);
        return d5_error(D5_ERR_NODEVICE,
                        "backend '%s' is unavailable here: %s (available here: %s)", r->name, why,
                        here);
    }
    for (const char *q = list; q < p;) { /* an earlier item with the same name */
        const char *end = strchr(q, ',');
        if ((size_t)(end - q) == len && strncmp(q, p, len) == 0)
            return d5_error(D5_ERR_INVALID, "backend '%s' appears twice in '%.200s'", r->name,
                            list);
        q = end + 1;
    }
    return D5_OK;
}

d5_status d5_backend_check_list(const char *list, int32_t allow_auto)
{
    if (!list) return d5_error(D5_ERR_INVALID, "d5_backend_check_list: NULL list");
    if (!list[0]) {
        char c[600];
        choices(c, sizeof c);
        return d5_error(D5_ERR_INVALID, "empty backend list %s", c);
    }
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return d5_error(D5_ERR_INVALID, "empty item in the backend list '%.200s'", list);
        d5_status s = check_item(list, p, len, allow_auto);
        if (s != D5_OK) return s;
        if (!end) return D5_OK;
        p = end + 1;
    }
}

int d5__backend_check(const char *backend, char *why, size_t why_size)
{
    char dummy[8];
    if (!why || why_size == 0) {
        why = dummy;
        why_size = sizeof dummy;
    }
    why[0] = '\0';
    const backend_row *r = backend ? lookup(backend, strlen(backend)) : NULL;
    if (!r) {
        char c[600];
        choices(c, sizeof c);
        snprintf(why, why_size, "unknown backend '%.64s' %s", backend ? backend : "(null)", c);
        return 0;
    }
    return probe(r, why, why_size);
}
