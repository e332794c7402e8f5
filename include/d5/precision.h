/* d5 level 0: compute precisions, and what an operator instance runs.
 *
 * Conv, Gemm, MatMul and FusedConv can compute in bfloat16 or float16 in two
 * ways: on tensors of that type, or on float32 tensors under a compute
 * precision (d5_executor_options.compute_precision), where the backend
 * multiplies in the lower precision and accumulates in float32. Which
 * kernels actually ran, and in which precision, is reported per operator
 * instance (d5_op_impl_get) and per executor node (d5_executor_node_impl,
 * d5_executor_precision_report in d5/executor.h). d5_dnnl_precision_support
 * says what oneDNN does with each precision on this machine.
 */
#ifndef D5_PRECISION_H
#define D5_PRECISION_H

#include "d5/operator.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attribute the executor passes to Conv, Gemm, MatMul and FusedConv nodes when
 * options.compute_precision is "bf16" or "f16": a STRING holding that
 * precision. The dnnl backend then computes float32 tensors in it where oneDNN
 * can (and stays float32 where it cannot, saying why in d5_op_impl.note);
 * other backends ignore it. */
#define D5_ATTR_PRECISION "__precision"

/* How a precision runs here. */
typedef enum d5_precision_class {
    D5_PRECISION_UNSUPPORTED = 0, /* no implementation on this CPU */
    D5_PRECISION_EMULATED = 1,    /* on instructions of a wider type: oneDNN's bfloat16 on plain
                                     AVX-512, int8 without VNNI */
    D5_PRECISION_NATIVE = 2       /* on instructions of that type: AVX512_BF16 or AMX for bfloat16,
                                     VNNI or AMX for int8; float32 always */
} d5_precision_class;

/* "native", "emulated", "unsupported"; "unknown" for any other value. */
D5_API const char *d5_precision_class_name(int cls);

/* What oneDNN does with `precision` ("f32", "bf16", "f16" or "int8") on this
 * machine, found by creating a small matrix multiplication of that type (int8:
 * u8 x s8 into s32) and reading the implementation oneDNN picked. *cls gets the
 * class; buf (size bytes, NUL-terminated, may be NULL when size is 0) a line
 * such as "native: avx512_core_amx, brg:avx512_core_amx_bf16" or "unsupported:
 * oneDNN 2.6.3 has no float16 matrix multiplication for this CPU
 * (avx512_core_amx)". Thread safe. D5_ERR_INVALID for another precision or a
 * NULL cls; in a build without oneDNN, D5_OK with D5_PRECISION_UNSUPPORTED and
 * the reason. */
D5_API D5_NODISCARD d5_status d5_dnnl_precision_support(const char *precision,
                                                        d5_precision_class *cls, char *buf,
                                                        size_t size);

/* What an operator instance runs, where its backend says (the dnnl backend's
 * Conv, FusedConv, Gemm and MatMul). Strings are NUL-terminated, "" when not
 * applicable. */
typedef struct d5_op_impl {
    int32_t reported;  /* 1: the backend filled the fields below; 0: it does not tell */
    char precision[8]; /* what the kernels multiply in: "f32", "bf16", "f16" */
    char requested[8]; /* the compute precision asked for (D5_ATTR_PRECISION), "" if none */
    int32_t support;   /* the d5_precision_class of `precision` on the kernels used */
    char isa[32];      /* oneDNN's effective instruction set: "avx512_core_amx" */
    /* Implementation names of the primitives, as oneDNN gives them
     * ("brgconv:avx512_core_amx_bf16"; "dnnl_sgemm" for Gemm's float32 path).
     * The backward ones are "" until the first backward call builds them.
     * backward_data computes the gradient of input 0 (Conv's X, Gemm's and
     * MatMul's A), backward_weights that of input 1 (W, B) and of the bias. */
    char forward[64], backward_data[64], backward_weights[64];
    /* Why a requested precision was not used, or how it was reached:
     * "float32 operands converted to bfloat16 for the primitives (oneDNN
     * 2.6.3's CPU kernels ignore the fpmath mode)". */
    char note[256];
} d5_op_impl;

/* Fills `out` for `op` (zeroed first; reported 0 for operators whose backend
 * does not tell). Not thread safe against a concurrent call on the same op. */
D5_API void d5_op_impl_get(const d5_op *op, d5_op_impl *out);

/* ---- GPU peaks (the cuda backend) ------------------------------------------------------ */

/* The precisions of a GPU's matrix units, measured as square products on
 * cuBLAS (cuBLASLt for FP8): FP32 on FMA units, then the tensor cores. */
typedef enum d5_gpu_peak_kind {
    D5_GPU_PEAK_FP32 = 0, /* cublasSgemm, no TF32 */
    D5_GPU_PEAK_TF32,     /* float32 operands, CUBLAS_COMPUTE_32F_FAST_TF32 */
    D5_GPU_PEAK_BF16,     /* bfloat16 in and out, float32 accumulation */
    D5_GPU_PEAK_FP16,     /* float16 in and out, float32 accumulation */
    D5_GPU_PEAK_FP8,      /* E4M3 in, bfloat16 out (cuBLASLt) */
    D5_GPU_PEAK_INT8,     /* int8 in, int32 out */
    D5_GPU_PEAK_KINDS
} d5_gpu_peak_kind;

typedef struct d5_gpu_peak {
    int32_t measured; /* 0: see note */
    int32_t size;     /* the products were size^3 */
    double median;    /* FLOP/s (OP/s for INT8): 2 size^3 / median time */
    double best;      /* the same of the fastest run */
    char note[256];   /* why it was not measured */
} d5_gpu_peak;

typedef struct d5_gpu_peaks {
    char device[256];                    /* the GPU's name (device 0) */
    d5_gpu_peak peak[D5_GPU_PEAK_KINDS]; /* indexed by d5_gpu_peak_kind */
    /* Device memory: a device-to-device copy of copy_bytes, bytes read plus
     * bytes written per second. */
    size_t copy_bytes;
    double bandwidth_median, bandwidth_best;
} d5_gpu_peaks;

/* "FP32", "TF32", "BF16", "FP16", "FP8", "INT8"; "?" for another value. */
D5_API const char *d5_gpu_peak_name(int kind);
/* Measures the peaks of CUDA device 0: products of size^3 (8192 in d5
 * machine), each timed with CUDA events after warm-up until max_time_s has
 * passed (at least five runs), and the copy bandwidth. A precision the device
 * or cuBLAS refuses is left unmeasured with the reason in its note.
 * D5_ERR_NODEVICE without a device, D5_ERR_UNSUPPORTED in a build without the
 * cuda backend; D5_ERR_INVALID for a size outside 256..32768. */
D5_API D5_NODISCARD d5_status d5_gpu_peaks_measure(int32_t size, double max_time_s,
                                                   d5_gpu_peaks *out);

#ifdef __cplusplus
}
#endif
#endif
