/* Threads of the CPU backends: OpenBLAS has its own pool; oneDNN (Debian's
 * build) runs on OpenMP, whose setter is looked up at run time so that d5 does
 * not link an OpenMP runtime of its own. */
#define _GNU_SOURCE
#include "d5/operator.h"

#include <cblas.h>
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

d5_status d5_backend_set_threads(int32_t n)
{
    if (n < 0)
        return d5_error(D5_ERR_INVALID, "thread count %d must be 0 (all) or positive", (int)n);
    if (n == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpus > 0 ? (int32_t)cpus : 1;
    }
    openblas_set_num_threads(n);
    /* POSIX guarantees that a dlsym result converts to a function pointer;
     * the memcpy keeps ISO C's pedantic mode quiet about it. */
    void *sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (sym) {
        void (*omp_set)(int);
        memcpy(&omp_set, &sym, sizeof omp_set);
        omp_set(n);
    }
    return D5_OK;
}
