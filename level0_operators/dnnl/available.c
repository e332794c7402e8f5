/* Whether the dnnl backend can run here: the oneDNN library loaded at run time
 * must be the major version d5 was compiled against. */
#include "dnnl_util.h"

#include <stdio.h>

int d5__dnnl_backend_check(char *why, size_t why_size);

int d5__dnnl_backend_check(char *why, size_t why_size)
{
    const dnnl_version_t *v = dnnl_version();
    if (!v || v->major != DNNL_VERSION_MAJOR) {
        snprintf(why, why_size, "oneDNN %d.x is loaded; d5 was built against oneDNN %d.x",
                 v ? v->major : -1, DNNL_VERSION_MAJOR);
        return 0;
    }
    return 1;
}
