/* String tensors: one block of pointers and bytes, clones, and a pool of
 * strings for the operators that make them. */
#include "d5/core.h"

#include <stdint.h>
#include <string.h>

const char *d5_string_at(const d5_tensor *t, int64_t i)
{
    const char *s = ((const char *const *)t->data)[i];
    return s ? s : "";
}

/* One block: numel pointers, then the strings with their NULs. */
static d5_status strings_block(const d5_tensor_desc *d, const char *const *strings,
                               const size_t *lengths, d5_tensor *out)
{
    size_t ptr_bytes;
    d5_status s = d5_tensor_desc_bytes(d, &ptr_bytes);
    if (s != D5_OK) return s;
    size_t numel = ptr_bytes / sizeof(char *), text = 0;
    for (size_t i = 0; i < numel; i++) {
        const char *str = strings[i] ? strings[i] : "";
        size_t n = lengths && strings[i] ? lengths[i] : strlen(str);
        if (lengths && strings[i] && memchr(str, 0, n))
            return d5_error(D5_ERR_INVALID,
                            "string element %zu holds a byte 0, which d5's strings cannot", i);
        if (n + 1 > SIZE_MAX - text - ptr_bytes)
            return d5_error(D5_ERR_RANGE, "the strings are larger than the address space");
        text += n + 1;
    }
    size_t total = ptr_bytes + text, rounded = (total + 63) / 64 * 64;
    d5_allocator a = d5_allocator_get();
    char *block = a.alloc(a.ctx, rounded ? rounded : 64, 64);
    if (!block)
        return d5_error(D5_ERR_NOMEM, "cannot allocate %zu bytes for %zu strings", total, numel);
    const char **ptrs = (const char **)(void *)block;
    char *p = block + ptr_bytes;
    for (size_t i = 0; i < numel; i++) {
        const char *str = strings[i] ? strings[i] : "";
        size_t n = lengths && strings[i] ? lengths[i] : strlen(str);
        memcpy(p, str, n);
        p[n] = '\0';
        ptrs[i] = p;
        p += n + 1;
    }
    memset(out, 0, sizeof *out);
    out->desc = *d;
    out->data = block;
    out->device = D5_DEVICE_CPU;
    return D5_OK;
}

d5_status d5_tensor_strings(const d5_tensor_desc *d, const char *const *strings,
                            const size_t *lengths, d5_tensor *out)
{
    if (!d || !out || (!strings && d5_tensor_desc_numel(d) > 0))
        return d5_error(D5_ERR_INVALID, "d5_tensor_strings: NULL argument");
    if (d->dtype != D5_STRING)
        return d5_error(D5_ERR_INVALID, "d5_tensor_strings: the descriptor's data type is %s",
                        d5_dtype_name((d5_dtype)d->dtype));
    return strings_block(d, strings, lengths, out);
}

d5_status d5_tensor_clone(const d5_tensor *src, d5_tensor *out)
{
    if (!src || !out) return d5_error(D5_ERR_INVALID, "d5_tensor_clone: NULL argument");
    if (src->device != D5_DEVICE_CPU)
        return d5_error(D5_ERR_INVALID, "d5_tensor_clone: the tensor is not in CPU memory");
    size_t bytes;
    d5_status s = d5_tensor_desc_bytes(&src->desc, &bytes);
    if (s != D5_OK) return s;
    if (bytes && !src->data)
        return d5_error(D5_ERR_INVALID, "d5_tensor_clone: the tensor has no data");
    if (src->desc.dtype == D5_STRING)
        return strings_block(&src->desc, (const char *const *)src->data, NULL, out);
    s = d5_tensor_alloc(&src->desc, out);
    if (s == D5_OK && bytes) memcpy(out->data, src->data, bytes);
    return s;
}

/* ---- The pool ---- */

struct d5__strchunk {
    struct d5__strchunk *next;
    size_t used, size;
    char text[];
};

enum { CHUNK_MIN = 4096 };

const char *d5_strpool_add(d5_strpool *p, const char *s, size_t n)
{
    if (!p || (!s && n)) {
        d5_error(D5_ERR_INVALID, "d5_strpool_add: NULL argument");
        return NULL;
    }
    struct d5__strchunk *c = p->head;
    if (!c || c->size - c->used < n + 1) {
        if (n > SIZE_MAX / 2 - sizeof *c) {
            d5_error(D5_ERR_RANGE, "a string of %zu bytes is larger than the address space", n);
            return NULL;
        }
        size_t size = n + 1 > CHUNK_MIN ? n + 1 : CHUNK_MIN;
        if (c && c->size * 2 > size && c->size < ((size_t)1 << 24)) size = c->size * 2;
        c = d5_alloc(sizeof *c + size, "string pool");
        if (!c) return NULL;
        c->next = p->head;
        c->used = 0;
        c->size = size;
        p->head = c;
    }
    char *dst = c->text + c->used;
    if (n) memcpy(dst, s, n);
    dst[n] = '\0';
    c->used += n + 1;
    return dst;
}

void d5_strpool_clear(d5_strpool *p)
{
    if (!p) return;
    for (struct d5__strchunk *c = p->head, *next; c; c = next) {
        next = c->next;
        d5_free(c);
    }
    p->head = NULL;
}
