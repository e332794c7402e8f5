/* Heap accounting between core/alloc.c and core/memtrack.c. Not installed. */
#ifndef D5_CORE_MEMTRACK_H
#define D5_CORE_MEMTRACK_H

#include "d5/memory.h"

#include <stdatomic.h>
#include <stddef.h>

/* 1 while accounting is on; read with a relaxed load on every allocation. */
extern atomic_int d5__memtrack_on;

static inline int d5__memtrack_active(void)
{
    return atomic_load_explicit(&d5__memtrack_on, memory_order_relaxed);
}

/* Accounts a block just allocated (p != NULL) and one about to be freed. */
void d5__memtrack_alloc(void *p, size_t size, const char *what);
void d5__memtrack_free(void *p);

/* The current allocator without accounting, for the bookkeeping itself. */
void *d5__raw_alloc(size_t size);
void d5__raw_free(void *p);

#endif
