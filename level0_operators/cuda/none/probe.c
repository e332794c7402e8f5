/* The cuda backend's probe (backends.def) in a build without it. */
#include <stdio.h>

int d5__cuda_backend_check(char *why, size_t why_size);

int d5__cuda_backend_check(char *why, size_t why_size)
{
    snprintf(why, why_size,
             "d5 was built without the cuda backend (it needs the CUDA toolkit and cuDNN)");
    return 0;
}
