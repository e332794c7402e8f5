/* d5 level 0: validation of operators, as in Deep500's test_forward and
 * test_gradient: a forward check of any backend or custom operator against a
 * reference, and a gradient check by central finite differences. */
#ifndef D5_VALIDATE_H
#define D5_VALIDATE_H

#include "d5/operator.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Differences between a result and the expected one. */
typedef struct d5_compare {
    int64_t n;           /* elements compared */
    double l1, l2, linf; /* norms of the difference */
    double max_rel;      /* max |got - want| / max(|want|, 1e-6 max|want|, 1e-30): relative
                            where want is not tiny, absolute against the tensor's scale
                            where it is (a reference of 0 gives no 1e29) */
    int64_t worst;       /* flat index of the largest |got - want| */
    double got, want;    /* values there */
    int nonfinite;       /* got has NaN or Inf where want is finite */
} d5_compare;

/* Compares two tensors of the same shape (float32 or float64, any mix). */
D5_API D5_NODISCARD d5_status d5_compare_tensors(const d5_tensor *got, const d5_tensor *want,
                                                 d5_compare *out);

typedef struct d5_check_params {
    double atol;             /* pass when linf <= atol + rtol * max|want| (default 1e-4) */
    double rtol;             /* (default 1e-4) */
    uint64_t seed;           /* for random inputs and output gradients (default 1) */
    const char *heatmap_csv; /* forward check: write |got - want| of output 0 as CSV rows */
    uint32_t constants;      /* bit i: create sees input i's values (given in `inputs`) even
                                when it is floating point, as a graph's constant (Resize's
                                scales); integer inputs always are (default 0) */
} d5_check_params;

D5_API d5_check_params d5_check_default_params(void);

#define D5_CHECK_MAX_OUTPUTS 8

typedef struct d5_forward_check {
    int passed;
    int32_t noutputs;
    d5_compare out[D5_CHECK_MAX_OUTPUTS];
    double tol[D5_CHECK_MAX_OUTPUTS]; /* atol + rtol * max|want| per output */
} d5_forward_check;

/* Creates `candidate` and `reference` on the same inputs and attributes and
 * compares every output. `inputs` NULL: float inputs are drawn uniformly from
 * [-1, 1] with the seed (non-float inputs must then be given). */
D5_API D5_NODISCARD d5_status d5_validate_forward(const d5_op_desc *candidate,
                                                  const d5_op_desc *reference,
                                                  const d5_tensor_desc *in, int32_t nin,
                                                  const d5_tensor *inputs, const d5_attrs *attrs,
                                                  int32_t noutputs, const d5_check_params *p,
                                                  d5_forward_check *out);

/* Runs backward of `candidate` and `reference` on the same inputs and random
 * output gradients and compares the input gradients (out[i] for input i; inputs
 * that are not floating point are skipped and count as passed). */
D5_API D5_NODISCARD d5_status d5_validate_backward(const d5_op_desc *candidate,
                                                   const d5_op_desc *reference,
                                                   const d5_tensor_desc *in, int32_t nin,
                                                   const d5_tensor *inputs, const d5_attrs *attrs,
                                                   int32_t noutputs, const d5_check_params *p,
                                                   d5_forward_check *out);

typedef struct d5_gradient_check {
    int passed;
    double step;         /* finite-difference step used */
    int64_t checked;     /* elements compared */
    int64_t skipped;     /* elements at a kink (one-sided slopes disagree) */
    int32_t worst_input; /* where the largest error is */
    int64_t worst_index;
    double analytic, numeric; /* the two gradients there */
    double error;             /* |analytic - numeric| there */
    double tol;               /* atol + rtol * max(|analytic|, |numeric|) there */
} d5_gradient_check;

typedef struct d5_gradient_params {
    double step;          /* 0: 1e-6 in float64, 1e-2 in float32 */
    double atol, rtol;    /* 0: 1e-5 in float64, 2e-2 in float32 */
    uint64_t seed;        /* random inputs and output gradients (default 1) */
    uint32_t wrt;         /* bit i: check input i (0: every floating-point input) */
    int64_t max_elements; /* per input, evenly spaced over it (0: every element) */
    uint32_t constants;   /* as d5_check_params.constants; these inputs are not checked */
} d5_gradient_params;

D5_API d5_gradient_params d5_gradient_default_params(void);

/* Checks op's backward against central finite differences of the scalar
 * L = sum_k <w_k, y_k>, with w_k random output gradients. An operator with
 * D5_OP_F64 is checked in float64 (its float inputs are promoted); others in
 * float32 with a wider step and tolerance. At an element where the left and
 * right slopes differ (a ReLU or MaxPool kink) the comparison is skipped and
 * counted. */
D5_API D5_NODISCARD d5_status d5_validate_gradient(const d5_op_desc *op, const d5_tensor_desc *in,
                                                   int32_t nin, const d5_tensor *inputs,
                                                   const d5_attrs *attrs, int32_t noutputs,
                                                   const d5_gradient_params *p,
                                                   d5_gradient_check *out);

/* Fills a tensor with uniform values in [lo, hi): float32 and float64 as
 * drawn, other types converted with d5_convert (float16 and bfloat16
 * rounded to nearest, integers truncated toward zero and saturated). */
D5_API void d5_tensor_fill_uniform(d5_tensor *t, d5_rng *rng, double lo, double hi);

#ifdef __cplusplus
}
#endif
#endif
