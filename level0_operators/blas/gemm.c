/* Gemm (ONNX opset 13) on OpenBLAS's cblas_sgemm: see gemm_common.c.
 * https://onnx.ai/onnx/operators/onnx__Gemm.html */
#include "../gemm_common.h"
#include "blas.h"

D5_GEMM_OPERATOR(blas, d5__sgemm);
