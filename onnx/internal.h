/* Internal helpers shared by the files of onnx/. Not installed.
 *
 * This is the only header that includes the protobuf-c code generated from
 * the system's onnx.proto; no protobuf type leaves onnx/.
 */
#ifndef D5_ONNX_INTERNAL_H
#define D5_ONNX_INTERNAL_H

#include "d5/onnx.h"
#include "onnx.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* The largest protobuf message that protobuf implementations accept (2 GiB);
 * bigger models keep their tensors in external data files. */
#define D5__ONNX_MAX_MESSAGE ((size_t)INT32_MAX)

/* The deepest nesting of messages accepted before unpacking (protobuf's own
 * default recursion limit is 100). Deeper input is refused without recursing. */
#define D5__ONNX_MAX_DEPTH 64

/* ---- Memory (util.c) ---- */

/* A protobuf-c allocator that draws on d5's allocator and remembers whether an
 * allocation failed, so that a failed unpack can be told apart from bad input. */
typedef struct d5__pb_alloc {
    ProtobufCAllocator base; /* first member: protobuf-c sees only this */
    int failed;
} d5__pb_alloc;
void d5__pb_alloc_init(d5__pb_alloc *a);

/* An arena of zeroed blocks freed all at once, for the messages that export
 * builds. */
typedef struct d5__arena {
    struct d5__arena_block *head;
} d5__arena;
/* NULL (with a D5_ERR_NOMEM message) when memory runs out. */
void *d5__arena_alloc(d5__arena *a, size_t size);
void *d5__arena_array(d5__arena *a, size_t count, size_t size);
void d5__arena_free(d5__arena *a);

/* ---- Files and messages (util.c) ---- */

/* Reads a whole regular file of at most `max` bytes into memory from d5_alloc.
 * D5_ERR_IO names the file when it cannot be opened or read; an empty file is
 * D5_ERR_FORMAT and a bigger one D5_ERR_UNSUPPORTED, naming `what` (what the
 * file should contain, "ONNX model"). */
d5_status d5__onnx_read_file(const char *path, size_t max, const char *what, void **data,
                             size_t *size);
/* The folder of a file path ("." for a bare name), from d5_alloc. */
char *d5__onnx_dirname(const char *path);
/* Prefixes the current detail message with "<what>: " and returns s. */
d5_status d5__onnx_prefix(d5_status s, const char *what);
/* D5_OK when the message nests at most D5__ONNX_MAX_DEPTH deep (or is not
 * well-formed protobuf, which unpacking then reports); D5_ERR_FORMAT else. */
d5_status d5__onnx_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                               size_t size);

/* ---- Tensors (tensorproto.c) ---- */

/* The d5 dtype of an ONNX TensorProto.DataType; D5_DTYPE_INVALID when d5 has none. */
d5_dtype d5__onnx_dtype(int32_t onnx_type);
/* The ONNX data type of a d5 dtype; 0 (UNDEFINED) for none. */
int32_t d5__onnx_type_of(d5_dtype dtype);
/* "FLOAT", "STRING", ...; "type 42" style text for unknown numbers. */
const char *d5__onnx_type_name(int32_t onnx_type, char *buf, size_t size);

/* Converts a TensorProto into a tensor with data from d5_tensor_alloc. `what`
 * names it in messages ("initializer 'w'"). External data is read relative to
 * base_dir (NULL: external data is refused). */
d5_status d5__onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir,
                                     const char *what, d5_tensor *out);
/* Fills *tp (already initialised) from a CPU tensor as raw_data; memory it
 * needs comes from the arena (tp may point into `data`). */
d5_status d5__onnx_tensor_to_proto(const d5_tensor_desc *desc, const void *data, const char *name,
                                   d5__arena *arena, Onnx__TensorProto *tp);

/* ---- External data (external.c) ---- */

/* Reads the external data of a tensor (data_location EXTERNAL; keys
 * location, offset, length) whose descriptor is `desc` (`bytes` bytes) into a
 * new tensor from d5_tensor_alloc, in file byte order. The location must be a
 * relative path that stays inside base_dir, symbolic links included; the file
 * must hold the bytes asked for. Checked before any memory is allocated. */
d5_status d5__onnx_external_read(const Onnx__TensorProto *tp, const char *base_dir,
                                 const char *what, const d5_tensor_desc *desc, size_t bytes,
                                 d5_tensor *out);

#endif
