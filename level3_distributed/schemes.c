/* The table of distributed schemes (schemes.def). */
#include "dist_internal.h"

#define X(e, name) extern const d5__scheme d5__scheme_##name;
#include "schemes.def"
#undef X

static const d5__scheme *const table[] = {
#define X(e, name) [D5_DIST_##e] = &d5__scheme_##name,
#include "schemes.def"
#undef X
};

_Static_assert(sizeof table / sizeof table[0] == D5_DIST_SCHEME_COUNT,
               "one schemes.def row per d5_dist_scheme");

const d5__scheme *d5__scheme_at(int32_t scheme)
{
    return scheme >= 0 && scheme < D5_DIST_SCHEME_COUNT ? table[scheme] : NULL;
}
