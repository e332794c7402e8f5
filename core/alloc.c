/* The replaceable allocator that all of d5's heap memory goes through, and
 * the heap accounting's entry points (core/memtrack.c): with accounting off,
 * one relaxed atomic load per allocation and free. */
#include "d5/core.h"
#include "memtrack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    if (align < sizeof(void *)) align = sizeof(void *);
    if (size > SIZE_MAX - align) return NULL;  /* rounding up would wrap to a small block */
    size = (size + align - 1) / align * align; /* aligned_alloc wants a multiple */
    return aligned_alloc(align, size ? size : align);
}

static void default_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static d5_allocator current = {default_alloc, default_free, NULL};

/* The functions d5_allocator_get hands out while accounting is on: the
 * current allocator, accounted. Code that keeps them past the end of
 * accounting still reaches the current allocator. */
static void *tracked_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    void *p = current.alloc(current.ctx, size, align);
    if (p && d5__memtrack_active()) d5__memtrack_alloc(p, size, "allocator hook");
    return p;
}

static void tracked_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr && d5__memtrack_active()) d5__memtrack_free(ptr);
    current.free(current.ctx, ptr);
}

void d5_allocator_set(const d5_allocator *a)
{
    if (a && a->alloc == tracked_alloc) return; /* what d5_allocator_get gave: already current */
    if (a && a->alloc && a->free)
        current = *a;
    else
        current = (d5_allocator){default_alloc, default_free, NULL};
}

d5_allocator d5_allocator_get(void)
{
    if (d5__memtrack_active()) return (d5_allocator){tracked_alloc, tracked_free, NULL};
    return current;
}

void *d5__raw_alloc(size_t size)
{
    return current.alloc(current.ctx, size, 16);
}

void d5__raw_free(void *p)
{
    current.free(current.ctx, p);
}

void *d5_alloc(size_t size, const char *what)
{
    void *p = current.alloc(current.ctx, size, 16);
    if (!p)
        d5_error(D5_ERR_NOMEM, "out of memory allocating %zu bytes for %s", size, what);
    else if (d5__memtrack_active())
        d5__memtrack_alloc(p, size, what);
    return p;
}

void *d5_calloc(size_t count, size_t size, const char *what)
{
    if (size != 0 && count > SIZE_MAX / size) {
        d5_error(D5_ERR_NOMEM, "allocation of %zu x %zu bytes for %s overflows", count, size, what);
        return NULL;
    }
    void *p = d5_alloc(count * size, what);
    if (p) memset(p, 0, count * size);
    return p;
}

void d5_free(void *ptr)
{
    if (ptr && d5__memtrack_active()) d5__memtrack_free(ptr);
    current.free(current.ctx, ptr);
}

void *d5_realloc(void *ptr, size_t old_size, size_t size, const char *what)
{
    void *p = d5_alloc(size, what);
    if (!p) return NULL;
    if (ptr) {
        memcpy(p, ptr, old_size < size ? old_size : size);
        d5_free(ptr);
    }
    return p;
}

d5_status d5_grow(void *array, size_t *cap, size_t need, size_t size, const char *what)
{
    if (need <= *cap) return D5_OK;
    if (need > SIZE_MAX / size)
        return d5_error(D5_ERR_NOMEM, "out of memory for %zu %s", need, what ? what : "elements");
    size_t n = *cap ? *cap : 8;
    while (n < need) n = n <= SIZE_MAX / 2 ? 2 * n : need;
    if (n > SIZE_MAX / size) n = need;
    void *old;
    memcpy(&old, array, sizeof old);
    void *p = d5_realloc(old, *cap * size, n * size, what);
    if (!p) return D5_ERR_NOMEM;
    memcpy(array, &p, sizeof p);
    *cap = n;
    return D5_OK;
}

char *d5_strdup(const char *s, const char *what)
{
    size_t n = strlen(s) + 1;
    char *p = d5_alloc(n, what);
    if (p) memcpy(p, s, n);
    return p;
}
