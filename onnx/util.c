/* Helpers of the ONNX library: protobuf-c memory through d5's allocator, an
 * arena for the messages export builds, whole-file reads, atomic writes, and a
 * nesting-depth check run before protobuf-c unpacks anything. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- protobuf-c's allocator ---- */

static void *pb_alloc(void *ctx, size_t size)
{
    d5__pb_alloc *a = ctx;
    void *p = d5_alloc(size, "ONNX protobuf message");
    if (!p) a->failed = 1;
    return p;
}

static void pb_free(void *ctx, void *ptr)
{
    (void)ctx;
    d5_free(ptr);
}

void d5__pb_alloc_init(d5__pb_alloc *a)
{
    a->base.alloc = pb_alloc;
    a->base.free = pb_free;
    a->base.allocator_data = a;
    a->failed = 0;
}

/* ---- Arena ---- */

struct d5__arena_block {
    struct d5__arena_block *next;
    alignas(16) unsigned char data[];
};

void *d5__arena_alloc(d5__arena *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(struct d5__arena_block)) {
        d5_error(D5_ERR_NOMEM, "allocation of %zu bytes for an ONNX message overflows", size);
        return NULL;
    }
    struct d5__arena_block *b =
        d5_calloc(1, sizeof(struct d5__arena_block) + size, "ONNX message being written");
    if (!b) return NULL;
    b->next = a->head;
    a->head = b;
    return b->data;
}

void *d5__arena_array(d5__arena *a, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        d5_error(D5_ERR_NOMEM, "allocation of %zu x %zu bytes for an ONNX message overflows", count,
                 size);
        return NULL;
    }
    return d5__arena_alloc(a, count * size);
}

void d5__arena_free(d5__arena *a)
{
    while (a->head) {
        struct d5__arena_block *next = a->head->next;
        d5_free(a->head);
        a->head = next;
    }
}

/* ---- Files ---- */

d5_status d5__onnx_read_file(const char *path, size_t max, const char *what, void **data,
                             size_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return d5_error(D5_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return d5_error(D5_ERR_IO, "%s: not a regular file, expected an %s", path, what);
    FILE *f = fopen(path, "rb");
    if (!f) return d5_error(D5_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    d5_status s = D5_OK;
    unsigned char *buf = NULL;
    if (fstat(fileno(f), &st) != 0) {
        s = d5_error(D5_ERR_IO, "%s: cannot read its size: %s", path, strerror(errno));
    } else if (st.st_size == 0) {
        s = d5_error(D5_ERR_FORMAT, "%s: empty file (0 bytes), not an %s", path, what);
    } else if ((uint64_t)st.st_size > (uint64_t)max) {
        s = d5_error(D5_ERR_UNSUPPORTED, "%s: %lld bytes, more than the %zu bytes an %s may have",
                     path, (long long)st.st_size, max, what);
    } else {
        size_t n = (size_t)st.st_size;
        buf = d5_alloc(n, "file contents");
        if (!buf) {
            s = d5_error(D5_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
        } else if (fread(buf, 1, n, f) != n) {
            s = d5_error(D5_ERR_IO, "%s: short read (file changed or I/O error)", path);
        } else {
            *data = buf;
            *size = n;
            buf = NULL;
        }
    }
    d5_free(buf);
    fclose(f);
    return s;
}

char *d5__onnx_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return d5_strdup(".", "folder name");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = d5_alloc(n + 1, "folder name");
    if (!dir) return NULL;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return dir;
}

d5_status d5__onnx_prefix(d5_status s, const char *what)
{
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", d5_last_error());
    if (detail[0] == '\0') snprintf(detail, sizeof detail, "%s", d5_status_str(s));
    return d5_error(s, "%s: %s", what, detail);
}

/* ---- Nesting depth ---- */

/* Reads a varint; 0 when the input ends or the varint is longer than 10 bytes. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* 1 when the message at [p, end) nests deeper than allowed; malformed input
 * stops the walk quietly (protobuf-c then rejects it). The recursion is
 * bounded by D5__ONNX_MAX_DEPTH. */
static int too_deep(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end,
                    int depth)
{
    if (depth > D5__ONNX_MAX_DEPTH) return 1;
    while (p < end) {
        uint64_t tag, len;
        if (!read_varint(&p, end, &tag)) return 0;
        switch (tag & 7) {
        case 0:
            if (!read_varint(&p, end, &len)) return 0;
            break;
        case 1:
            if (end - p < 8) return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return 0;
            uint64_t number = tag >> 3;
            const ProtobufCFieldDescriptor *field =
                number <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)number)
                    : NULL;
            if (field && field->type == PROTOBUF_C_TYPE_MESSAGE &&
                too_deep(field->descriptor, p, p + len, depth + 1))
                return 1;
            p += len;
            break;
        }
        default: return 0; /* groups and invalid wire types */
        }
    }
    return 0;
}

d5_status d5__onnx_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                               size_t size)
{
    if (too_deep(desc, data, data + size, 0))
        return d5_error(D5_ERR_FORMAT,
                        "messages nest more than %d deep (a corrupt or hostile file)",
                        D5__ONNX_MAX_DEPTH);
    return D5_OK;
}
