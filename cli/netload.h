/* Loading a model for the network commands. */
#ifndef D5_CLI_NETLOAD_H
#define D5_CLI_NETLOAD_H

#include "d5/d5.h"

#include <jansson.h>

/* Loads an ONNX file; batch > 0 sets the first dimension of every input, else
 * symbolic_batch > 0 sets only unknown or symbolic first dimensions. Every
 * input must then have a full shape (D5_ERR_SHAPE names the input and
 * dimension otherwise). */
d5_status netload_open(const char *path, int64_t batch, int64_t symbolic_batch, d5_network **out);
/* One tensor per graph input: read from the comma-separated .pb files of
 * `list` in input order, or, when list is NULL, seeded random values. Free with
 * netload_inputs_free. */
d5_status netload_inputs(const d5_network *net, const char *list, uint64_t seed, d5_tensor **out,
                         int32_t *count);
void netload_inputs_free(d5_tensor *t, int32_t n);
/* Writes JSON atomically (a temporary file renamed into place): the file
 * appears whole or not at all. 0 on success. */
int netload_write_json(json_t *root, const char *path);

/* --optimize: the level named by `text`, or when text is NULL all for
 * inference and none with backprop. Returns -1 to go on, or the exit status
 * after printing what is wrong (an unknown level, a folding level with
 * backprop). */
int netload_optimize_level(const char *cmd, const char *text, int backprop,
                           d5_optimize_level *level);
/* "all: eliminate-identity 0, fold-batchnorm 19; 71 nodes -> 52" */
void netload_optimize_text(const d5_optimize_report *r, char *buf, size_t size);

#endif
