/* Helpers shared by the reference operators of ref/ops_extra.def: reading an
 * input known at create whatever its data type, ONNX data type numbers, and a
 * stable sort of indices with a context. */
#ifndef D5_REF_EXTRA_H
#define D5_REF_EXTRA_H

#include "util.h"

/* The values of input i, known at create, as doubles in *out (allocated here
 * with d5_alloc; free with d5_free) of *n values. D5_ERR_UNSUPPORTED naming the
 * operator and input ("Unique: input 0 (X) must be a constant: its values
 * decide the output shape") when the values are not known at create. */
d5_status d5__known_values(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                           const char *what, double **out, int64_t *n);

/* The d5 data type of an ONNX TensorProto.DataType number given in attribute
 * `attr` of `op`; D5_ERR_UNSUPPORTED naming both for a type d5 does not have
 * (string, complex, float8). */
d5_status d5__attr_dtype(const char *op, const char *attr, int64_t onnx, int32_t *dtype);

/* Sorts idx[0..n-1] so that cmp(ctx, idx[k], idx[k+1]) <= 0, stably (a merge
 * sort; equal elements keep their order). D5_ERR_NOMEM when its scratch space
 * cannot be allocated. */
typedef int (*d5_index_cmp)(const void *ctx, int64_t a, int64_t b);
d5_status d5__sort_indices(int64_t *idx, int64_t n, d5_index_cmp cmp, const void *ctx);

/* Orders doubles as numpy sorts them: ascending, NaN after everything and equal
 * to another NaN. */
static inline int d5__cmp_double(double a, double b)
{
    int an = a != a, bn = b != b;
    if (an || bn) return an - bn;
    return (a > b) - (a < b);
}

#endif
