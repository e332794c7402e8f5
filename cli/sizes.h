/* Problem sizes for `d5 test-operator`: DeepBench lists, smoke sizes, CSV
 * files and inline specs, turned into operator inputs and attributes. */
#ifndef D5_CLI_SIZES_H
#define D5_CLI_SIZES_H

#include "d5/d5.h"

#define CASE_MAX_INPUTS 4
#define CASE_MAX_ATTRS  8

typedef struct op_case {
    char label[160]; /* "M=1760,N=128,K=1760,a_t=N,b_t=N" */
    int32_t nin;
    d5_tensor_desc in[CASE_MAX_INPUTS];
    int32_t nattrs;
    d5_attr attrs[CASE_MAX_ATTRS];
    int64_t ints[CASE_MAX_ATTRS][8]; /* storage of INTS attributes */
} op_case;

/* Which sizes an operator takes: GEMM sizes (Gemm, MatMul), convolution sizes
 * (Conv), or one shape for every input (the rest). */
typedef enum size_family { FAMILY_GEMM, FAMILY_CONV, FAMILY_SHAPE } size_family;
size_family sizes_family(const char *op);

/* Builds the cases for `op` from `spec`: "smoke", "deepbench-train",
 * "deepbench-infer", a CSV file with DeepBench's column names, or inline
 * "K=V,K=V[;K=V,...]". `min_inputs` is the operator's input count (shape
 * family). The array is malloc'd. D5_ERR_IO/D5_ERR_FORMAT/D5_ERR_INVALID name
 * the file, line or key at fault. */
d5_status sizes_load(const char *op, int32_t min_inputs, const char *spec, op_case **cases,
                     size_t *n);
/* Where DeepBench's lists are: $D5_DATA_DIR, the installed share/d5, or the source tree. */
const char *sizes_data_dir(void);

#endif
