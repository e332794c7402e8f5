/* The one call into OpenBLAS. */
#include "blas.h"

#include <cblas.h>

void d5__sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc)
{
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, alpha, a,
                (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
}

d5_status d5__blas_need_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t i)
{
    if (i >= nin || in[i].desc.dtype == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_INVALID, "%s (blas): input %d is required", op, i);
    if (in[i].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (blas): input %d is %s; the blas backend runs "
                        "float32 only",
                        op, i, d5_dtype_name((d5_dtype)in[i].desc.dtype));
    return D5_OK;
}
