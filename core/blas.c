/* OpenBLAS as this process has loaded it. Core does not link OpenBLAS: level
 * 0's blas backend does. Its functions are looked up at run time in the
 * process's global scope, as OpenMP's setter is (threads.c), so that the
 * OpenBLAS the operators use is the one whose threads are set and whose
 * build is reported; a program without it reports none. */
#define _GNU_SOURCE
#include "d5/threads.h"
#include "internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct {
    char *(*get_config)(void);
    char *(*get_corename)(void);
    int (*get_num_threads)(void);
    int (*get_parallel)(void);
    void (*set_num_threads)(int);
} blas;

/* POSIX guarantees that a dlsym result converts to a function pointer; the
 * memcpy keeps ISO C's pedantic mode quiet about it. */
static void find(const char *name, void *fn, size_t size)
{
    void *sym = dlsym(RTLD_DEFAULT, name);
    if (sym) memcpy(fn, &sym, size);
}

static void find_all(void)
{
    find("openblas_get_config", &blas.get_config, sizeof blas.get_config);
    find("openblas_get_corename", &blas.get_corename, sizeof blas.get_corename);
    find("openblas_get_num_threads", &blas.get_num_threads, sizeof blas.get_num_threads);
    find("openblas_get_parallel", &blas.get_parallel, sizeof blas.get_parallel);
    find("openblas_set_num_threads", &blas.set_num_threads, sizeof blas.set_num_threads);
}

/* Once per process, from any thread. */
static void look_up(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_all);
}

void d5__blas_set_threads(int32_t n)
{
    look_up();
    if (blas.set_num_threads) blas.set_num_threads((int)n);
}

void d5_blas_info_get(d5_blas_info *out)
{
    memset(out, 0, sizeof *out);
    look_up();
    out->loaded = blas.get_config != NULL;
    if (blas.get_config) snprintf(out->config, sizeof out->config, "%s", blas.get_config());
    if (blas.get_corename) snprintf(out->core, sizeof out->core, "%s", blas.get_corename());
    if (blas.get_num_threads) out->threads = blas.get_num_threads();
    const char *parallel = "none";
    if (blas.get_parallel) switch (blas.get_parallel()) {
        case 0: parallel = "serial"; break;
        case 1: parallel = "pthreads"; break;
        case 2: parallel = "openmp"; break;
        default: parallel = "unknown"; break;
        }
    snprintf(out->parallel, sizeof out->parallel, "%s", parallel);
}
