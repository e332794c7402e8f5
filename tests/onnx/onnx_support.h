/* Helpers shared by the ONNX tests. */
#ifndef D5_TEST_ONNX_SUPPORT_H
#define D5_TEST_ONNX_SUPPORT_H

#include "d5/onnx.h"

#include <stddef.h>

/* Writes to `path` the model `name`: x -> Relu -> y, float32 tensors of
 * `shape` (ndim 0: scalars), importing opset `version` of `domain` when domain
 * is not NULL (else d5's default opsets). */
void save_relu_model(const char *path, const char *name, int32_t ndim, const int64_t *shape,
                     const char *domain, int64_t version);

/* The fixtures of tests/onnx/data/ and the ONNX backend test data. */
#define FIXTURES D5_SOURCE_DIR "/tests/onnx/data"
#define TESTDATA D5_ONNX_TESTDATA

/* 1 when the path exists. */
int path_exists(const char *path);

/* Compares two networks: name, opsets, nodes with their attributes (values
 * bitwise), initializers (descriptor and bytes), graph inputs (descriptor and
 * dim_params) and outputs. Returns 0 when equal, else 1 with the first
 * difference in why. */
int net_diff(const d5_network *a, const d5_network *b, char *why, size_t size);

/* The model.onnx files of libonnx-testdata/data/<folder>, sorted: a
 * NULL-terminated malloc'd array of malloc'd paths (free with paths_free). */
char **testdata_models(const char *folder, size_t *count);
void paths_free(char **paths);

/* What `make_fixtures.py --survey` counts in a folder of libonnx-testdata: its
 * models, and those d5 can represent (the others use tensor types, attribute
 * types or graph forms that d5 does not support, and fail to load with
 * D5_ERR_UNSUPPORTED). 0 for an unknown folder. */
size_t testdata_representable(const char *folder, size_t *total);

/* Runs onnx.checker.check_model(full_check=True) of Debian's python3 on every
 * file listed in list_file, one line each: "EXPORTED" or "EXPORTED<TAB>ORIGINAL"
 * (skipped when the original fails the checker too). Returns the exit status:
 * 0 when all pass, -2 when no python with onnx is available. */
int python_check(const char *list_file);

#endif
