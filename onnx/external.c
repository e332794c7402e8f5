/* External data of ONNX tensors: TensorProto.data_location EXTERNAL with the
 * keys location, offset and length, read relative to the model's folder.
 * https://onnx.ai/onnx/repo-docs/ExternalData.html */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Parses a non-negative decimal number; 0 when it is not one. */
static int parse_u64(const char *text, uint64_t *out)
{
    if (!text || text[0] < '0' || text[0] > '9') return 0;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return 0;
    *out = v;
    return 1;
}

/* 1 when a relative location has a ".." component (either slash counts). */
static int has_parent_component(const char *loc)
{
    const char *p = loc;
    while (*p) {
        size_t n = strcspn(p, "/\\");
        if (n == 2 && p[0] == '.' && p[1] == '.') return 1;
        p += n;
        if (*p) p++;
    }
    return 0;
}

/* Checks the location and resolves it inside base_dir into `resolved`. */
static d5_status resolve(const char *base_dir, const char *loc, const char *what,
                         char resolved[PATH_MAX])
{
    if (loc[0] == '\0') return d5_error(D5_ERR_FORMAT, "%s: external data location is empty", what);
    if (loc[0] == '/' || loc[0] == '\\')
        return d5_error(D5_ERR_FORMAT,
                        "%s: external data location '%s' is an absolute path; it must be relative "
                        "to the model's folder",
                        what, loc);
    if (has_parent_component(loc))
        return d5_error(D5_ERR_FORMAT,
                        "%s: external data location '%s' leaves the model's folder ('..')", what,
                        loc);
    if (!base_dir)
        return d5_error(D5_ERR_INVALID,
                        "%s: external data file '%s' but the model was given in memory without a "
                        "folder to look in",
                        what, loc);
    char base[PATH_MAX], joined[PATH_MAX];
    if (!realpath(base_dir, base))
        return d5_error(D5_ERR_IO, "%s: model folder '%s': %s", what, base_dir, strerror(errno));
    int n = snprintf(joined, sizeof joined, "%s/%s", base, loc);
    if (n < 0 || (size_t)n >= sizeof joined)
        return d5_error(D5_ERR_FORMAT, "%s: external data location '%s' is too long", what, loc);
    if (!realpath(joined, resolved))
        return d5_error(D5_ERR_IO, "%s: external data file '%s' (looked for '%s'): %s", what, loc,
                        joined, strerror(errno));
    size_t bl = strlen(base);
    int inside =
        strncmp(resolved, base, bl) == 0 && (resolved[bl] == '/' || (bl == 1 && base[0] == '/'));
    if (!inside)
        return d5_error(D5_ERR_FORMAT,
                        "%s: external data location '%s' leads to '%s', outside the model's "
                        "folder '%s'",
                        what, loc, resolved, base);
    return D5_OK;
}

d5_status d5__onnx_external_read(const Onnx__TensorProto *tp, const char *base_dir,
                                 const char *what, const d5_tensor_desc *desc, size_t bytes,
                                 d5_tensor *out)
{
    const char *loc = NULL;
    uint64_t offset = 0, length = 0;
    int has_length = 0;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key) continue;
        if (strcmp(e->key, "location") == 0) {
            loc = e->value ? e->value : "";
        } else if (strcmp(e->key, "offset") == 0) {
            if (!parse_u64(e->value, &offset))
                return d5_error(D5_ERR_FORMAT, "%s: external data offset '%s' is not a number",
                                what, e->value ? e->value : "");
        } else if (strcmp(e->key, "length") == 0) {
            if (!parse_u64(e->value, &length))
                return d5_error(D5_ERR_FORMAT, "%s: external data length '%s' is not a number",
                                what, e->value ? e->value : "");
            has_length = 1;
        }
    }
    if (!loc) return d5_error(D5_ERR_FORMAT, "%s: external data without a 'location' key", what);
    if (has_length && length != bytes)
        return d5_error(D5_ERR_FORMAT, "%s: external data length %llu, expected %zu bytes", what,
                        (unsigned long long)length, bytes);
    char path[PATH_MAX];
    d5_status s = resolve(base_dir, loc, what, path);
    if (s != D5_OK) return s;

    FILE *f = fopen(path, "rb");
    if (!f)
        return d5_error(D5_ERR_IO, "%s: external data file '%s': %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return d5_error(D5_ERR_IO, "%s: external data file '%s' is not a regular file", what, path);
    }
    uint64_t fsize = (uint64_t)st.st_size;
    if (offset > fsize || bytes > fsize - offset) {
        fclose(f);
        return d5_error(D5_ERR_FORMAT,
                        "%s: external data file '%s' has %llu bytes; the tensor needs %zu at "
                        "offset %llu",
                        what, path, (unsigned long long)fsize, bytes, (unsigned long long)offset);
    }
    d5_tensor t;
    s = d5_tensor_alloc(desc, &t);
    if (s != D5_OK) {
        fclose(f);
        return d5_error(s, "%s: out of memory for %zu bytes of external data", what, bytes);
    }
    if (bytes && (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(t.data, 1, bytes, f) != bytes))
        s = d5_error(D5_ERR_IO, "%s: cannot read %zu bytes at offset %llu of '%s'", what, bytes,
                     (unsigned long long)offset, path);
    fclose(f);
    if (s != D5_OK) {
        d5_tensor_free(&t);
        return s;
    }
    if (desc->dtype == D5_BOOL)
        for (size_t i = 0; i < bytes; i++) ((uint8_t *)t.data)[i] = ((uint8_t *)t.data)[i] != 0;
    *out = t;
    return D5_OK;
}
