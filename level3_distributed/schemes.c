/* The table of distributed schemes (d5/dist_schemes.def). */
#include "dist_internal.h"

#define D5_DIST_SCHEME(ENUM, NAME) extern const d5__scheme d5__scheme_##NAME;
#include "d5/dist_schemes.def"
#undef D5_DIST_SCHEME

static const d5__scheme *const table[] = {
#define D5_DIST_SCHEME(ENUM, NAME) [D5_DIST_##ENUM] = &d5__scheme_##NAME,
#include "d5/dist_schemes.def"
#undef D5_DIST_SCHEME
};

_Static_assert(sizeof table / sizeof table[0] == D5_DIST_SCHEME_COUNT,
               "one d5/dist_schemes.def row per d5_dist_scheme");

const d5__scheme *d5__scheme_at(int32_t scheme)
{
    return scheme >= 0 && scheme < D5_DIST_SCHEME_COUNT ? table[scheme] : NULL;
}
