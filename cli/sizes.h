/* Problem sizes for `d5 test-operator`: DeepBench lists, smoke sizes, CSV
 * files and inline specs, turned into operator inputs and attributes. */
#ifndef D5_CLI_SIZES_H
#define D5_CLI_SIZES_H

#include "d5/d5.h"

#define CASE_MAX_INPUTS 10
#define CASE_MAX_ATTRS  12
#define CASE_MAX_VALUES 32

/* How an input's values are drawn (op_runner.c fills them). */
typedef enum case_fill_kind {
    FILL_DEFAULT, /* floats uniform in [-1, 1]; integers in [-8, 8]; bool 0 or 1 */
    FILL_RANGE,   /* uniform in [lo, hi) for floats, integers lo..hi for the others */
    FILL_VALUES   /* the given values (one value: every element) */
} case_fill_kind;

typedef struct case_fill {
    int kind;  /* a case_fill_kind */
    int known; /* the operator sees the values at create (a constant input): set for
                  FILL_VALUES, for inputs that are not floating point, and by '!' */
    double lo, hi;
    int32_t nvalues;
    double values[CASE_MAX_VALUES];
    char words[256]; /* a string input's given values: "a,b,c" (FILL_VALUES) */
} case_fill;

typedef struct op_case {
    char label[160]; /* "M=1760,N=128,K=1760,a_t=N,b_t=N" or a case spec */
    int32_t nin;
    d5_tensor_desc in[CASE_MAX_INPUTS]; /* dtype D5_DTYPE_INVALID: an omitted optional input */
    case_fill fill[CASE_MAX_INPUTS];
    int32_t nattrs;
    d5_attr attrs[CASE_MAX_ATTRS]; /* their names and values point into the storage below:
                                      copy a case with case_copy */
    char names[CASE_MAX_ATTRS][32];
    char strs[CASE_MAX_ATTRS][64];
    int64_t ints[CASE_MAX_ATTRS][8];
    double floats[CASE_MAX_ATTRS][8];
    int precision; /* a case_precision: PREC_F32 as loaded */
    char op[32];   /* the operator that runs the case when not the one asked for
                      ("MatMulInteger" for Gemm in int8), else "" */
} op_case;

/* Copies a case, pointing the copy's attributes into its own storage. */
void case_copy(op_case *dst, const op_case *src);

/* Parses one case spec (docs/level0.md, "Default cases"):
 *   INPUT... [| NAME=VALUE...]
 * INPUT is "-" (an omitted optional input) or TYPE[D,...] with TYPE f32, f64,
 * f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64, bool or str (or d5's
 * dtype names), then optionally ={v,...} (its values: as many as it has
 * elements, or one for all; words without blanks or commas for str) or
 * ~[lo,hi] (drawn in that range; for str, the length of random lower-case
 * words, 1 to 8 letters by default), then optionally '!' (the operator sees
 * the values at create). VALUE is an integer, a number with a
 * '.' or an exponent, a [list] of either (or of words: ONNX STRINGS), a word,
 * or a "quoted string". `where` prefixes error messages (D5_ERR_FORMAT). */
d5_status case_spec_parse(const char *spec, const char *where, op_case *c);

/* The precisions of `d5 test-operator --dtype`. */
typedef enum case_precision { PREC_F32, PREC_BF16, PREC_F16, PREC_I8, PREC_COUNT } case_precision;
/* "f32", "bf16", "f16", "i8". */
const char *precision_name(int p);
/* The element type of the precision: D5_F32, D5_BF16, D5_F16, D5_I8. */
d5_dtype precision_dtype(int p);
/* "f32,bf16", "i8" or "all" into a mask of (1 << case_precision); D5_ERR_INVALID naming
 * the item that is none. */
d5_status precision_parse(const char *spec, unsigned *mask);

/* The case in precision `p` (`in` is a case of sizes_load, in float32):
 * - bf16, f16: every float32 input of the operator in that type;
 * - i8: Gemm and MatMul become MatMulInteger with A [M,K] uint8 and B [K,N]
 *   int8 (Gemm's transposes are dropped: MatMulInteger has none), Conv becomes
 *   ConvInteger with X uint8 and W int8 and Conv's attributes; the output is
 *   int32. Other operators take every float32 input as int8.
 * The label stays the size's. */
void sizes_in_precision(const char *op, const op_case *in, int p, op_case *out);
/* The length of the sums behind each output element: Gemm's and MatMul's K,
 * Conv's C/group x kernel size; for other operators the elements of input 0 per
 * element of output 0 (1 for elementwise ones). For tolerances. */
double sizes_reduction_length(const char *op, const op_case *c, const d5_tensor_desc *out0);

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
