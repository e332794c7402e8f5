/* The dnnl backend's probe (backends.def) in a build without oneDNN. */
#include <stdio.h>

int d5__dnnl_backend_check(char *why, size_t why_size);

int d5__dnnl_backend_check(char *why, size_t why_size)
{
    snprintf(why, why_size, "d5 was built without oneDNN (libdnnl-dev was not found)");
    return 0;
}
