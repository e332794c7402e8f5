/* local: every rank trains alone, nothing is communicated during training:
 * the baseline that scaling efficiency is measured against. */
#include "dist_internal.h"

/* clang-format off */
const d5__scheme d5__scheme_local = {
    .name = "local",
    .description = "no communication: each rank trains its own model (the baseline)",
    .synchronous = 1};
/* clang-format on */
