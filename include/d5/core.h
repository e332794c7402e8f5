/* d5 core: status codes, data types, tensors, the allocator and build information.
 *
 * Every fallible d5 function returns a d5_status. On failure it also sets a
 * thread-local detail message, read with d5_last_error(), that names what was
 * wrong and where ("timer key 'FORWARD': end without a matching start").
 * Unless a function says otherwise, its outputs are left untouched on failure.
 * The library never calls exit() or abort() on bad input.
 */
#ifndef D5_CORE_H
#define D5_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define D5_API __declspec(dllexport)
#else
#define D5_API __attribute__((visibility("default")))
#endif

#if defined(__GNUC__)
#define D5_NODISCARD    __attribute__((warn_unused_result))
#define D5_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define D5_NODISCARD
#define D5_PRINTF(f, a)
#endif

/* ---- Status ------------------------------------------------------------ */

/* One list generates the enum, d5_status_name() and d5_status_str(). */
#define D5_STATUS_LIST(X)                                                                          \
    X(OK, "success")                                                                               \
    X(ERR_INVALID, "invalid argument")                                                             \
    X(ERR_NOMEM, "out of memory")                                                                  \
    X(ERR_IO, "input/output error")                                                                \
    X(ERR_FORMAT, "malformed data")                                                                \
    X(ERR_UNSUPPORTED, "not supported")                                                            \
    X(ERR_SHAPE, "shape mismatch")                                                                 \
    X(ERR_BACKEND, "backend failure")                                                              \
    X(ERR_NUMERIC, "numerical error")                                                              \
    X(ERR_STATE, "call out of order")                                                              \
    X(ERR_NODEVICE, "no device available")                                                         \
    X(ERR_NOTFOUND, "not found")                                                                   \
    X(ERR_RANGE, "value out of range")                                                             \
    X(ERR_TIMEOUT, "timed out")

typedef enum d5_status {
#define D5__STATUS_ENUM(name, text) D5_##name,
    D5_STATUS_LIST(D5__STATUS_ENUM)
#undef D5__STATUS_ENUM
        D5_STATUS_COUNT
} d5_status;

/* "D5_ERR_IO" for D5_ERR_IO; "D5_UNKNOWN" for values outside the list. */
D5_API const char *d5_status_name(d5_status s);
/* A short description ("input/output error"); never NULL. */
D5_API const char *d5_status_str(d5_status s);
/* The detail message of the last failure on this thread ("" if none). The
 * pointer stays valid until the next d5 call on this thread that fails. */
D5_API const char *d5_last_error(void);
/* Sets the detail message and returns `s`, for code that builds on d5 (custom
 * operators, front ends) and wants to report errors the same way. */
D5_API d5_status d5_error(d5_status s, const char *fmt, ...) D5_PRINTF(2, 3);
/* Clears the detail message of this thread. */
D5_API void d5_error_clear(void);

/* ---- Data types ---------------------------------------------------------- */

/* The values of d5_dtype cross the operator ABI and are stored in files: new
 * types go at the end of the list so that the others keep their numbers. */
#define D5_DTYPE_LIST(X)                                                                           \
    X(F32, "float32", 4)                                                                           \
    X(F64, "float64", 8)                                                                           \
    X(F16, "float16", 2)                                                                           \
    X(BF16, "bfloat16", 2)                                                                         \
    X(I8, "int8", 1)                                                                               \
    X(U8, "uint8", 1)                                                                              \
    X(I16, "int16", 2)                                                                             \
    X(I32, "int32", 4)                                                                             \
    X(I64, "int64", 8)                                                                             \
    X(BOOL, "bool", 1)                                                                             \
    X(U16, "uint16", 2)                                                                            \
    X(U32, "uint32", 4)                                                                            \
    X(U64, "uint64", 8)                                                                            \
    X(F8E4M3FN, "float8e4m3fn", 1)                                                                 \
    X(F8E4M3FNUZ, "float8e4m3fnuz", 1)                                                             \
    X(F8E5M2, "float8e5m2", 1)                                                                     \
    X(F8E5M2FNUZ, "float8e5m2fnuz", 1)                                                             \
    X(F8E8M0, "float8e8m0", 1)                                                                     \
    X(F4E2M1, "float4e2m1", 1)                                                                     \
    X(I4, "int4", 1)                                                                               \
    X(U4, "uint4", 1)                                                                              \
    X(I2, "int2", 1)                                                                               \
    X(U2, "uint2", 1)                                                                              \
    X(STRING, "string", sizeof(const char *))

typedef enum d5_dtype {
    D5_DTYPE_INVALID = 0,
#define D5__DTYPE_ENUM(name, text, size) D5_##name,
    D5_DTYPE_LIST(D5__DTYPE_ENUM)
#undef D5__DTYPE_ENUM
        D5_DTYPE_COUNT
} d5_dtype;

/* "float32" etc.; "invalid" outside the list. */
D5_API const char *d5_dtype_name(d5_dtype t);
/* Bytes per element; 0 for D5_DTYPE_INVALID or unknown values. */
D5_API size_t d5_dtype_size(d5_dtype t);
/* Parses a name as printed by d5_dtype_name ("float32"). D5_ERR_NOTFOUND otherwise. */
D5_API D5_NODISCARD d5_status d5_dtype_parse(const char *name, d5_dtype *out);
/* 1 for the floating-point types (float32, float64, float16, bfloat16), 0 else. */
D5_API int d5_dtype_is_float(d5_dtype t);

/* ---- The narrow types ------------------------------------------------------- */

/* ONNX's float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), float4 (E2M1) and
 * 4- and 2-bit integers. In memory one element takes one byte: a float8 or
 * float4 code as it is (float4 in the low four bits), int4 and int2 as int8
 * values (-8..7, -2..1), uint4 and uint2 as uint8 (0..15, 0..3). ONNX files
 * pack the sub-byte ones two or four to a byte. */
/* Bits of one element in an ONNX file: 2, 4, 8, 16, 32 or 64 (0: invalid). */
D5_API int d5_dtype_bits(d5_dtype t);
/* 1 for the float8 and float4 types. */
D5_API int d5_dtype_is_minifloat(d5_dtype t);
/* The value of a float8 or float4 code (NaN for a NaN code). */
D5_API double d5_f64_from_narrow(d5_dtype t, uint8_t code);
/* The code nearest x, ties to even, for float8 E4M3FN, E4M3FNUZ, E5M2,
 * E5M2FNUZ and float4 E2M1: ONNX's Cast rules. Past the largest finite value
 * (after rounding) saturate gives it (with x's sign); otherwise E5M2 gives
 * infinity and the others NaN, as infinities do. float4 always saturates,
 * and makes NaN 6. -0 stays -0 except in the FNUZ types. E8M0: as
 * d5_f8e8m0_from_f32 rounding up. */
D5_API uint8_t d5_narrow_from_f64(d5_dtype t, double x, int saturate);

/* How Cast rounds to float8 E8M0 (attribute round_mode). */
typedef enum d5_round_mode {
    D5_ROUND_UP = 0,
    D5_ROUND_DOWN = 1,
    D5_ROUND_NEAREST = 2
} d5_round_mode;
/* "up", "down" or "nearest"; D5_ERR_INVALID otherwise. */
D5_API D5_NODISCARD d5_status d5_round_mode_parse(const char *text, d5_round_mode *mode);
/* The E8M0 code of x (its sign ignored), ONNX's rule on the bits of the
 * float32: the exponent field, one more when `mode` rounds up (up: any
 * fraction; nearest: the guard bit with the round or sticky bits or a
 * nonzero exponent), never past 254 under saturation (255 otherwise: NaN);
 * NaN and infinities give 255. */
D5_API uint8_t d5_f8e8m0_from_f32(float x, int saturate, d5_round_mode mode);

/* ---- Half precision and conversions ----------------------------------------- */

/* float16 (IEEE 754 binary16) and bfloat16 values travel as their bit patterns
 * in uint16_t. Narrowing rounds once to the nearest value, ties to even (from
 * a double directly, never through float); a value beyond the largest finite
 * one (65504 for float16) that rounds past it becomes infinity of its sign;
 * subnormals are exact; NaN stays NaN, made quiet, sign kept; -0 stays -0.
 * Widening is exact. Pure functions: thread safe. */
D5_API uint16_t d5_f16_from_f32(float x);
D5_API uint16_t d5_f16_from_f64(double x);
D5_API float d5_f32_from_f16(uint16_t h);
D5_API uint16_t d5_bf16_from_f32(float x);
D5_API uint16_t d5_bf16_from_f64(double x);
D5_API float d5_f32_from_bf16(uint16_t h);

/* Converts n elements from src (of src_dtype) to dst (of dst_dtype); the
 * buffers must not overlap unless they are the same buffer and the types have
 * the same size. The rules are the ref backend's:
 *   - to a floating-point type: the nearest value, ties to even, rounded once
 *     (integers of 64 bits too); beyond the type's range, infinity;
 *   - floating point to an integer type: truncated toward zero, saturated at
 *     the type's ends (infinities too), NaN to 0;
 *   - integer to integer: the value, saturated at the target's ends;
 *   - to bool: 1 for any nonzero value (NaN included), else 0; bool reads as
 *     0 or 1;
 *   - to float8 and float4: d5_narrow_from_f64 without saturation (NaN where
 *     the type has no infinity; float4 saturates); to E8M0 rounding up,
 *     saturated, as Cast's defaults.
 * ONNX's Cast follows numpy instead (integers wrap): see the ref Cast.
 * D5_ERR_INVALID for an unknown dtype or NULL buffers with n > 0. */
D5_API D5_NODISCARD d5_status d5_convert(const void *src, d5_dtype src_dtype, void *dst,
                                         d5_dtype dst_dtype, size_t n);

/* ---- Tensors -------------------------------------------------------------- */

/* The tensor descriptor and tensor cross the operator ABI: their layout is
 * fixed. Add fields only at the end, under a new ABI version. */
#define D5_MAX_DIMS 8

typedef enum d5_layout {
    D5_LAYOUT_ROW_MAJOR = 0, /* dense, last dimension contiguous (ONNX, NCHW) */
    D5_LAYOUT_NHWC = 1       /* channels last, for backends that prefer it */
} d5_layout;

typedef enum d5_device { D5_DEVICE_CPU = 0, D5_DEVICE_CUDA = 1 } d5_device;

typedef struct d5_tensor_desc {
    int32_t dtype;              /* a d5_dtype */
    int32_t ndim;               /* 0 (scalar) .. D5_MAX_DIMS */
    int64_t shape[D5_MAX_DIMS]; /* sizes; entries past ndim are ignored */
    int32_t layout;             /* a d5_layout */
    int32_t reserved;           /* zero */
} d5_tensor_desc;

typedef struct d5_tensor {
    d5_tensor_desc desc;
    void *data;     /* CPU or device memory, see device */
    int32_t device; /* a d5_device */
    int32_t device_index;
} d5_tensor;

/* Builds a descriptor; D5_ERR_INVALID for ndim outside 0..D5_MAX_DIMS, a
 * negative size or an unknown dtype. */
D5_API D5_NODISCARD d5_status d5_tensor_desc_make(d5_dtype dtype, int32_t ndim,
                                                  const int64_t *shape, d5_tensor_desc *out);
/* Number of elements (1 for a scalar). Assumes a valid descriptor. */
D5_API int64_t d5_tensor_desc_numel(const d5_tensor_desc *d);
/* Checks a descriptor and returns its size in bytes; D5_ERR_RANGE on overflow. */
D5_API D5_NODISCARD d5_status d5_tensor_desc_bytes(const d5_tensor_desc *d, size_t *bytes);
/* Writes "float32[64,3,224,224]" into buf (always NUL-terminated). */
D5_API void d5_tensor_desc_format(const d5_tensor_desc *d, char *buf, size_t size);
/* Allocates zeroed CPU memory for a tensor through the d5 allocator, 64-byte
 * aligned. Free with d5_tensor_free. */
D5_API D5_NODISCARD d5_status d5_tensor_alloc(const d5_tensor_desc *d, d5_tensor *out);
/* Frees memory from d5_tensor_alloc and clears data; NULL or empty is a no-op. */
D5_API void d5_tensor_free(d5_tensor *t);

/* ---- Strings -------------------------------------------------------------- */

/* A string tensor (D5_STRING, ONNX's STRING) holds a `const char *` an
 * element: a NUL-terminated byte string (UTF-8 in ONNX files); NULL reads as
 * "". The tensor's data is the array of pointers; where the bytes live
 * depends on who made it:
 *   - d5_tensor_alloc: every element NULL (empty strings);
 *   - d5_tensor_clone, d5_tensor_strings and the ONNX readers: the bytes in
 *     the same block as the pointers, so that d5_tensor_free frees both;
 *   - an operator's outputs: the operator's own storage, valid until its
 *     next forward call or its destruction (copy them out with
 *     d5_tensor_clone to keep them).
 * Copying a string tensor's data copies pointers, not strings. Strings enter
 * no arithmetic: d5_convert refuses them (ONNX's Cast converts to and from
 * text). */
/* Element i of a string tensor, "" for NULL. */
D5_API const char *d5_string_at(const d5_tensor *t, int64_t i);
/* A string tensor of descriptor d (dtype D5_STRING) with element i the
 * lengths[i] bytes at strings[i] (lengths NULL: NUL-terminated strings;
 * strings[i] NULL: ""), copied into one block. D5_ERR_INVALID for a byte 0
 * inside a string or a descriptor of another type. */
D5_API D5_NODISCARD d5_status d5_tensor_strings(const d5_tensor_desc *d, const char *const *strings,
                                                const size_t *lengths, d5_tensor *out);
/* A copy of src (CPU memory) in new memory from d5_tensor_alloc; a string
 * tensor's strings are copied too, into the same block. */
D5_API D5_NODISCARD d5_status d5_tensor_clone(const d5_tensor *src, d5_tensor *out);

/* A pool of strings for code that makes them (an operator's outputs): each
 * d5_strpool_add copies n bytes and a NUL and returns the copy, valid until
 * d5_strpool_clear, which frees them all. Zero-initialise a pool before use. */
typedef struct d5_strpool {
    struct d5__strchunk *head;
} d5_strpool;
/* NULL (D5_ERR_NOMEM set) when memory runs out. */
D5_API const char *d5_strpool_add(d5_strpool *p, const char *s, size_t n);
D5_API void d5_strpool_clear(d5_strpool *p);

/* ---- Allocator ----------------------------------------------------------- */

/* All of d5's heap memory goes through these hooks. `alloc` returns memory
 * aligned to `align` (a power of two) or NULL; `free` accepts NULL. */
typedef struct d5_allocator {
    void *(*alloc)(void *ctx, size_t size, size_t align);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} d5_allocator;

/* Replaces the allocator process-wide; NULL restores the default (the C
 * library's aligned_alloc/free). Not thread safe: set it before using d5, and
 * free everything allocated with one allocator before switching. */
D5_API void d5_allocator_set(const d5_allocator *a);
D5_API d5_allocator d5_allocator_get(void);
/* Allocation helpers for code built on d5; they set a detail message naming
 * `what` when memory runs out. */
D5_API void *d5_alloc(size_t size, const char *what);
D5_API void *d5_calloc(size_t count, size_t size, const char *what);
D5_API void d5_free(void *ptr);
/* Grows or shrinks a block (copying min(old_size, size) bytes); NULL on
 * failure, leaving `ptr` valid. */
D5_API void *d5_realloc(void *ptr, size_t old_size, size_t size, const char *what);
/* Room for `need` elements of `size` bytes in the array *array (a T **
 * passed as void *) of capacity *cap: doubled (from 8) until it holds them,
 * through d5_realloc. On failure D5_ERR_NOMEM, *array and *cap unchanged. */
D5_API D5_NODISCARD d5_status d5_grow(void *array, size_t *cap, size_t need, size_t size,
                                      const char *what);
D5_API char *d5_strdup(const char *s, const char *what);

/* ---- Random numbers ----------------------------------------------------------- */

/* A seeded, reproducible generator (xoshiro256**, seeded through splitmix64):
 * the same seed gives the same stream on every machine. Plain data: copy it to
 * fork a stream. */
typedef struct d5_rng {
    uint64_t s[4];
} d5_rng;

D5_API void d5_rng_seed(d5_rng *r, uint64_t seed);
D5_API uint64_t d5_rng_next(d5_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
D5_API double d5_rng_uniform(d5_rng *r);
/* Standard normal (Box-Muller). */
D5_API double d5_rng_normal(d5_rng *r);
/* Uniform integer in [0, n) without modulo bias; 0 for n == 0. */
D5_API uint64_t d5_rng_below(d5_rng *r, uint64_t n);

/* FNV-1a over n bytes, continuing from h (start with D5_FNV1A_OFFSET): a
 * fast, non-cryptographic hash for tables and for comparing parameters. */
#define D5_FNV1A_OFFSET 14695981039346656037ull
D5_API uint64_t d5_fnv1a(uint64_t h, const void *p, size_t n);

/* ---- Files ----------------------------------------------------------------------- */

/* A file written atomically: output goes to a temporary file beside `path`;
 * d5_afile_commit flushes, syncs and renames it over `path`, d5_afile_abort
 * removes it, so that a reader never sees half a file. The struct is filled by
 * open and emptied by commit or abort (each frees what open allocated; commit
 * also on failure). Write through `f`. */
typedef struct d5_afile {
    FILE *f;
    char *path;
    char *tmp;
} d5_afile;
/* D5_ERR_IO naming the path and the system's reason; D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_afile_open(d5_afile *af, const char *path);
/* D5_ERR_IO when a write, the flush, the sync or the rename failed (the
 * temporary file is removed and `path` untouched). */
D5_API D5_NODISCARD d5_status d5_afile_commit(d5_afile *af);
D5_API void d5_afile_abort(d5_afile *af);
/* mkdir -p: D5_ERR_IO naming the directory on failure. */
D5_API D5_NODISCARD d5_status d5_mkdirs(const char *path);
/* Joins a directory and a name with one '/' into a new string (caller frees
 * with d5_free); NULL when out of memory. */
D5_API char *d5_path_join(const char *dir, const char *name);

/* ---- Input files ---------------------------------------------------------------- */

/* D5_OK when `path` is a regular file (following links). A FIFO, socket,
 * device or directory is D5_ERR_IO naming the path, its kind and `what` it
 * should have been ("IDX images file"): opening a FIFO for reading would
 * block until a writer appears. A missing file is D5_ERR_IO with the system's
 * reason. */
D5_API D5_NODISCARD d5_status d5_file_check_regular(const char *path, const char *what);
/* Writes `len` bytes to `path` atomically: into a temporary file beside it
 * (mode 0644), flushed and synced, then renamed over `path`. A reader never
 * sees half a file; on failure the temporary file is removed and `path` is
 * untouched. D5_ERR_IO names the path and the system's reason. */
D5_API D5_NODISCARD d5_status d5_file_write_atomic(const char *path, const void *data, size_t len);

/* The library's version, "0.1.0" (its build: d5_build_info_get, d5/report.h). */
D5_API const char *d5_version(void);

#ifdef __cplusplus
}
#endif
#endif
