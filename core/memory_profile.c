/* The memory profile as plain data (d5/memory.h): the names of its phases and
 * block kinds, and freeing it. Its reporters are in the reporting library. */
#include "d5/memory.h"

#include <string.h>

const char *d5_memory_phase_name(int32_t phase)
{
    static const char *const names[] = {"forward", "backward", "optimizer", "other"};
    return phase >= 0 && phase < 4 ? names[phase] : "unknown";
}

const char *d5_memory_block_kind_name(int32_t kind)
{
    static const char *const names[] = {"value", "gradient", "scratch", "heap"};
    return kind >= 0 && kind < 4 ? names[kind] : "unknown";
}

void d5_memory_profile_free(d5_memory_profile *p)
{
    if (!p) return;
    for (int32_t i = 0; p->rows && i < p->nrows; i++) {
        d5_free(p->rows[i].name);
        d5_free(p->rows[i].op_type);
        d5_free(p->rows[i].backend);
    }
    for (int64_t i = 0; p->blocks && i < p->nblocks; i++) d5_free(p->blocks[i].label);
    d5_free(p->rows);
    d5_free(p->blocks);
    d5_free(p->timeline);
    d5_free(p->name);
    memset(p, 0, sizeof *p);
}
