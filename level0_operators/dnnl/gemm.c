/* Gemm (ONNX opset 13) on oneDNN's dnnl_sgemm: see gemm_common.c.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html */
#include "../gemm_common.h"
#include "dnnl_util.h"

static void dnnl_sgemm_rowmajor(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                                float alpha, const float *a, int64_t lda, const float *b,
                                int64_t ldb, float beta, float *c, int64_t ldc)
{
    /* dnnl_sgemm is row-major; its status only reports bad arguments, which
     * create() has excluded. */
    (void)dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                     c, ldc);
}

D5_GEMM_OPERATOR(dnnl, dnnl_sgemm_rowmajor);
