/* libFuzzer target for the sizes of `d5 test-operator` (cli/sizes.c): any
 * spec, inline ("K=V,K=V;...") or a CSV file, must either give cases or fail
 * with a status, never crash, leak, hang or read out of bounds. The first
 * byte picks the operator (bits 0-1: Gemm, Conv, Relu with 1 input, Add with
 * 2) and the mode (bit 2: the rest is a CSV file's content; clear: an inline
 * spec, which goes to a CSV file too when it has neither '=' nor '[', as
 * sizes_load would take it for a path; with '[' it is a case spec). Cases
 * that load must be well formed: at most CASE_MAX_INPUTS inputs of valid
 * types and at most D5_MAX_DIMS non-negative sizes (an empty shape= is a
 * scalar), fills within their bounds, at most CASE_MAX_ATTRS attributes whose
 * names and values point into the case's own storage, a NUL-terminated label. */
#define _POSIX_C_SOURCE 200809L
#include "sizes.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    const char *op;
    int32_t min_inputs;
} ops[4] = {{"Gemm", 2}, {"Conv", 2}, {"Relu", 1}, {"Add", 2}};

/* A folder of this process under /tmp, removed at exit. */
static char dir[64], csv_path[96];

static void remove_files(void)
{
    unlink(csv_path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/d5-fuzz-sizes-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) {
        perror("fuzz_sizes: mkdtemp");
        abort();
    }
    snprintf(csv_path, sizeof csv_path, "%s/sizes.csv", dir);
    atexit(remove_files);
    return 0;
}

static void check_case(const op_case *c)
{
    if (c->nin < 0 || c->nin > CASE_MAX_INPUTS || c->nattrs < 0 || c->nattrs > CASE_MAX_ATTRS ||
        !memchr(c->label, '\0', sizeof c->label))
        abort();
    for (int32_t i = 0; i < c->nin; i++) {
        const d5_tensor_desc *d = &c->in[i];
        const case_fill *f = &c->fill[i];
        if (d->dtype < 0 || d->dtype >= D5_DTYPE_COUNT || d->ndim < 0 || d->ndim > D5_MAX_DIMS)
            abort();
        for (int32_t j = 0; j < d->ndim; j++)
            if (d->shape[j] < 0) abort();
        if (f->kind == FILL_VALUES && (f->nvalues < 1 || f->nvalues > CASE_MAX_VALUES)) abort();
        if (f->kind == FILL_RANGE && !(f->lo <= f->hi)) abort();
    }
    for (int32_t k = 0; k < c->nattrs; k++) {
        const d5_attr *a = &c->attrs[k];
        if (a->name != c->names[k] || !memchr(c->names[k], '\0', sizeof c->names[k])) abort();
        if (a->type == D5_ATTR_INTS && (a->ints != c->ints[k] || a->count > 8)) abort();
        if (a->type == D5_ATTR_FLOATS && (a->floats != c->floats[k] || a->count > 8)) abort();
        if (a->type == D5_ATTR_STRING &&
            (a->s != c->strs[k] || !memchr(c->strs[k], '\0', sizeof c->strs[k])))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const int pick = data[0] & 3, csv = (data[0] >> 2) & 1;
    const uint8_t *rest = data + 1;
    const size_t len = size - 1;
    char *spec = malloc(len + 1);
    if (!spec) abort();
    memcpy(spec, rest, len);
    spec[len] = '\0';
    if (csv || (!strchr(spec, '=') && !strchr(spec, '['))) {
        FILE *f = fopen(csv_path, "wb");
        if (!f || fwrite(rest, 1, len, f) != len || fclose(f) != 0) {
            perror("fuzz_sizes: writing the CSV file");
            abort();
        }
        free(spec);
        spec = strdup(csv_path);
        if (!spec) abort();
    }
    op_case *cases = NULL;
    size_t n = 0;
    d5_status s = sizes_load(ops[pick].op, ops[pick].min_inputs, spec, &cases, &n);
    if (s == D5_OK) {
        if (n == 0 || !cases) abort();
        for (size_t i = 0; i < n; i++) check_case(&cases[i]);
    } else if (cases || n) {
        abort();
    }
    free(cases);
    free(spec);
    return 0;
}
