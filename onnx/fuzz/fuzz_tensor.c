/* libFuzzer target for TensorProto files (d5_onnx_tensor_read): any byte
 * string must either load or fail with a status, never crash, leak, hang or
 * read out of bounds (external data may name files of the input's own folder,
 * a private one under /tmp). A tensor that loads is written back with
 * d5_onnx_tensor_write and read again: the name, the descriptor and the bytes
 * must be the same. */
#define _POSIX_C_SOURCE 200809L
#include "d5/onnx.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A folder of this process under /tmp, removed at exit. */
static char dir[64], in_path[96], out_path[96];

static void remove_files(void)
{
    unlink(in_path);
    unlink(out_path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/d5-fuzz-tensor-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) {
        perror("fuzz_tensor: mkdtemp");
        abort();
    }
    snprintf(in_path, sizeof in_path, "%s/input.pb", dir);
    snprintf(out_path, sizeof out_path, "%s/output.pb", dir);
    atexit(remove_files);
    return 0;
}

static int same_desc(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int32_t i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* The same values: bytes, or for strings the strings the pointers name. */
static int same_data(const d5_tensor *a, const d5_tensor *b, size_t bytes)
{
    if (a->desc.dtype != D5_STRING) return bytes == 0 || memcmp(a->data, b->data, bytes) == 0;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&a->desc); i++)
        if (strcmp(d5_string_at(a, i), d5_string_at(b, i)) != 0) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(in_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror("fuzz_tensor: writing the input");
        abort();
    }
    d5_tensor t;
    char *name = NULL;
    if (d5_onnx_tensor_read(in_path, &t, &name) != D5_OK) return 0;
    size_t bytes = 0;
    if (d5_tensor_desc_bytes(&t.desc, &bytes) != D5_OK) abort();
    if (d5_onnx_tensor_write(out_path, &t, name) != D5_OK) {
        fprintf(stderr, "fuzz_tensor: a tensor that loads cannot be written: %s\n",
                d5_last_error());
        abort();
    }
    d5_tensor back;
    char *back_name = NULL;
    if (d5_onnx_tensor_read(out_path, &back, &back_name) != D5_OK) {
        fprintf(stderr, "fuzz_tensor: a written tensor does not load again: %s\n", d5_last_error());
        abort();
    }
    if (strcmp(name, back_name) != 0 || !same_desc(&t.desc, &back.desc) ||
        !same_data(&t, &back, bytes)) {
        fprintf(stderr, "fuzz_tensor: the tensor read back differs\n");
        abort();
    }
    d5_tensor_free(&back);
    d5_free(back_name);
    d5_tensor_free(&t);
    d5_free(name);
    return 0;
}
