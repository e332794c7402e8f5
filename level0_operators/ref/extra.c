/* Helpers shared by the reference operators of ref/ops_extra.def. */
#include "extra.h"

#include <string.h>

d5_status d5__known_values(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                           const char *what, double **out, int64_t *n)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, what);
    if (!in[i].data)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: input %d (%s) must be a constant: its values decide the output shape",
                        op, (int)i, what);
    int64_t count = d5_tensor_desc_numel(&in[i].desc);
    double *v = d5_alloc((size_t)(count ? count : 1) * sizeof *v, op);
    if (!v) return D5_ERR_NOMEM;
    d5_status s = d5_convert(in[i].data, (d5_dtype)in[i].desc.dtype, v, D5_F64, (size_t)count);
    if (s != D5_OK) {
        d5_free(v);
        return s;
    }
    *out = v;
    *n = count;
    return D5_OK;
}

/* ONNX TensorProto.DataType numbers of the d5 data types. */
static const struct {
    int64_t onnx;
    int32_t dtype;
} onnx_types[] = {
    {1, D5_F32},  {2, D5_U8},   {3, D5_I8},    {4, D5_U16},  {5, D5_I16},
    {6, D5_I32},  {7, D5_I64},  {9, D5_BOOL},  {10, D5_F16}, {11, D5_F64},
    {12, D5_U32}, {13, D5_U64}, {16, D5_BF16},
};

d5_status d5__attr_dtype(const char *op, const char *attr, int64_t onnx, int32_t *dtype)
{
    for (size_t k = 0; k < sizeof onnx_types / sizeof onnx_types[0]; k++)
        if (onnx_types[k].onnx == onnx) {
            *dtype = onnx_types[k].dtype;
            return D5_OK;
        }
    return d5_error(D5_ERR_UNSUPPORTED,
                    "%s: attribute '%s' is %lld, an ONNX data type d5 does not have (d5 has FLOAT "
                    "1, UINT8 2, INT8 3, UINT16 4, INT16 5, INT32 6, INT64 7, BOOL 9, FLOAT16 10, "
                    "DOUBLE 11, UINT32 12, UINT64 13, BFLOAT16 16)",
                    op, attr, (long long)onnx);
}

/* Merges the sorted runs a[0..na) and b[0..nb) into out, a's first on ties. */
static void merge(const int64_t *a, int64_t na, const int64_t *b, int64_t nb, int64_t *out,
                  d5_index_cmp cmp, const void *ctx)
{
    int64_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) out[k++] = cmp(ctx, b[j], a[i]) < 0 ? b[j++] : a[i++];
    while (i < na) out[k++] = a[i++];
    while (j < nb) out[k++] = b[j++];
}

d5_status d5__sort_indices(int64_t *idx, int64_t n, d5_index_cmp cmp, const void *ctx)
{
    if (n < 2) return D5_OK;
    int64_t *tmp = d5_alloc((size_t)n * sizeof *tmp, "sort");
    if (!tmp) return D5_ERR_NOMEM;
    int64_t *src = idx, *dst = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo, cmp, ctx);
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) memcpy(idx, src, (size_t)n * sizeof *idx);
    d5_free(tmp);
    return D5_OK;
}
