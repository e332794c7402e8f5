/* Cast to and from STRING (cast_string.c), for Cast and CastLike. */
#ifndef D5_REF_CAST_STRING_H
#define D5_REF_CAST_STRING_H
#include "d5/core.h"

/* n elements of src (of type `from`) as text, numpy's astype(str), the
 * strings in `pool`. */
d5_status d5__cast_to_strings(const void *src, d5_dtype from, const char **dst, size_t n,
                              d5_strpool *pool);
/* n strings as float64 (dst) or float32 (dst32 when not NULL); `boolean`
 * also takes "true" and "false". D5_ERR_INVALID names an element that is no
 * number, counting from `base` (src is element base of the tensor). */
d5_status d5__cast_parse_f64(const char *const *src, size_t n, size_t base, double *dst,
                             float *dst32, int boolean);
/* n strings as integers (signed, or unsigned when is_unsigned: the bits of
 * the uint64 in dst); a number that is not an integer of that kind goes to
 * fallback[i] as a float64, with is_float[i] = 1. */
d5_status d5__cast_parse_i64(const char *const *src, size_t n, size_t base, int is_unsigned,
                             int64_t *dst, double *fallback, uint8_t *is_float);
#endif
