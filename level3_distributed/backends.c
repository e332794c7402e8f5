/* The backend table: every row of backends.def, whether this build has it,
 * and the list that error messages name. */
#include <stdio.h>
#include <string.h>

#if D5_HAVE_MPI
#include "comm_internal.h"
#define D5_COMM_BACKEND(NAME, EXACT, DESC) extern const d5__comm_ops d5__comm_ops_##NAME;
#include "backends.def"
#undef D5_COMM_BACKEND
#define D5__OPS(NAME) &d5__comm_ops_##NAME
#else
#include "backends.h"
#define D5__OPS(NAME) NULL
#endif

static const d5__backend table[] = {
#define D5_COMM_BACKEND(NAME, EXACT, DESC) {#NAME, DESC, EXACT, D5__OPS(NAME)},
#include "backends.def"
#undef D5_COMM_BACKEND
};

#define NBACKENDS (sizeof table / sizeof table[0])

size_t d5__backend_count(void)
{
    return NBACKENDS;
}

const d5__backend *d5__backend_at(size_t i)
{
    return i < NBACKENDS ? &table[i] : NULL;
}

const d5__backend *d5__backend_find(const char *name)
{
    for (size_t i = 0; name && i < NBACKENDS; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

const char *d5__backend_unavailable(const d5__backend *b)
{
#if D5_HAVE_MPI
    return b->ops->unavailable;
#else
    (void)b;
    return "d5 was built without MPI";
#endif
}

void d5__backend_names(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", table[i].name);
}

size_t d5_comm_backend_count(void)
{
    return NBACKENDS;
}

d5_status d5_comm_backend_at(size_t i, d5_comm_backend_info *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_comm_backend_at: NULL output");
    if (i >= NBACKENDS)
        return d5_error(D5_ERR_RANGE, "communicator backend %zu: there are %zu", i,
                        (size_t)NBACKENDS);
    out->name = table[i].name;
    out->description = table[i].description;
    out->built = d5__backend_unavailable(&table[i]) == NULL;
    out->exact_counts = table[i].exact_counts;
    return D5_OK;
}

const char *d5_comm_op_name(d5_comm_op op)
{
    static const char *const names[] = {
#define D5__COMM_OP_NAME(name, text) text,
        D5_COMM_OP_LIST(D5__COMM_OP_NAME)
#undef D5__COMM_OP_NAME
    };
    _Static_assert(sizeof names / sizeof names[0] == D5_COMM_OP_COUNT, "one name per kind");
    if (op == D5_COMM_OP_ALL) return "all";
    if (op < 0 || op >= D5_COMM_OP_COUNT) return "unknown";
    return names[op];
}
