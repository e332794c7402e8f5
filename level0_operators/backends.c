/* Which backends are built, and usable on this machine. */
#include "d5/operator.h"

#include <stdio.h>
#include <string.h>

#ifndef D5_HAVE_DNNL
#define D5_HAVE_DNNL 0
#endif

int d5__backend_check(const char *backend, char *why, size_t why_size);
int d5__cuda_backend_check(char *why, size_t why_size); /* cuda/ or below */

#if !D5_HAVE_CUDA
int d5__cuda_backend_check(char *why, size_t why_size)
{
    snprintf(why, why_size,
             "d5 was built without the cuda backend (it needs the CUDA toolkit and cuDNN)");
    return 0;
}
#endif

int d5__backend_check(const char *backend, char *why, size_t why_size)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_size = sizeof dummy;
    }
    why[0] = '\0';
    if (strcmp(backend, "ref") == 0 || strcmp(backend, "blas") == 0) return 1;
    if (strcmp(backend, "dnnl") == 0) {
        if (!D5_HAVE_DNNL) snprintf(why, why_size, "d5 was built without oneDNN");
        return D5_HAVE_DNNL;
    }
    if (strcmp(backend, "cuda") == 0) return d5__cuda_backend_check(why, why_size);
    snprintf(why, why_size, "unknown backend '%s' (backends: ref, blas, dnnl, cuda)", backend);
    return 0;
}
