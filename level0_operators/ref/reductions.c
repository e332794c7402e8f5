/* The reductions over a set of axes besides ReduceSum and ReduceMean:
 *   ReduceMax, ReduceMin      the largest (smallest) element; -inf (+inf) when
 *                             the reduced set is empty
 *   ReduceProd                the product (1 when empty)
 *   ReduceL1, ReduceL2        sum |x|, sqrt(sum x^2)
 *   ReduceSumSquare           sum x^2
 *   ReduceLogSum              log(sum x)
 *   ReduceLogSumExp           log(sum e^x), computed around the largest element
 * (ONNX opsets 13 and 18). Up to opset 17 the reduced axes are the attribute
 * `axes`; from opset 18 they are the optional int64 input 1, which d5 needs
 * known at create, together with the attribute noop_with_empty_axes (default
 * 0: no axes reduce every axis; 1: the reduction runs over the empty set of
 * axes, each element alone, so that ReduceL2 gives |x| and ReduceSumSquare
 * x^2, as in ONNX's reference implementation). Axes in the wrong form for the
 * opset a network passes ("__opset") are an error; an operator created
 * directly takes either form (reduce.c). keepdims (default 1) keeps reduced
 * axes with size 1. Data is floating point or a 32- or 64-bit integer
 * (ReduceMax and ReduceMin: int8 and uint8 too, and bool, which ONNX adds in
 * opset 20 and d5 takes at every opset: the maximum is `any` and the minimum
 * `all`, false and true over an empty set, as ONNX's reference gives them);
 * integer results are truncated toward zero and wrap into their type (a
 * product that overflows).
 *
 * Gradients: ReduceMax and ReduceMin send each output's gradient to the first
 * element (in row-major order) that holds the extreme value; ReduceProd to
 * each element as the product of the others (exact with zeros); ReduceL1 as
 * sign(x); ReduceL2 as x / y (0 where y = 0); ReduceSumSquare as 2x;
 * ReduceLogSum as 1 / sum x; ReduceLogSumExp as e^(x - y).
 * https://onnx.ai/onnx/operators/onnx__ReduceMax.html
 * https://onnx.ai/onnx/operators/onnx__ReduceMin.html
 * https://onnx.ai/onnx/operators/onnx__ReduceProd.html
 * https://onnx.ai/onnx/operators/onnx__ReduceL1.html
 * https://onnx.ai/onnx/operators/onnx__ReduceL2.html
 * https://onnx.ai/onnx/operators/onnx__ReduceSumSquare.html
 * https://onnx.ai/onnx/operators/onnx__ReduceLogSum.html
 * https://onnx.ai/onnx/operators/onnx__ReduceLogSumExp.html */
#include "reduce.h"

#include <math.h>

typedef enum kind { MAX, MIN, PROD, L1, L2, SUM_SQUARE, LOG_SUM, LOG_SUM_EXP } kind;

/* A planned reduction and two scratch values per output element. */
typedef struct reduction {
    d5_reduce plan;
    kind kind;
    int64_t nout;
    double scratch[];
} reduction;

static d5_status reduction_create(const char *op, kind k, const d5_tensor *in, int32_t nin,
                                  const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    void *plan = NULL;
    d5_dtypes types = D5__WIDE;
    if (k == MAX || k == MIN) types |= D5__DT(D5_I8) | D5__DT(D5_U8) | D5__DT(D5_BOOL);
    d5_status s = d5__reduce_create(op, types, in, nin, attrs, out, &plan);
    if (s != D5_OK) return s;
    int64_t n = d5_tensor_desc_numel(&out[0]);
    reduction *r = d5_alloc(sizeof *r + 2 * (size_t)n * sizeof(double), op);
    if (!r) {
        d5_free(plan);
        return D5_ERR_NOMEM;
    }
    r->plan = *(const d5_reduce *)plan;
    r->kind = k;
    r->nout = n;
    d5_free(plan);
    *state = r;
    return D5_OK;
}

/* The start value of an output element, and one element folded into it. */
static double start(kind k)
{
    return k == MAX ? -INFINITY : k == MIN ? INFINITY : k == PROD ? 1 : 0;
}
static double fold(kind k, double acc, double x)
{
    switch (k) {
    case MAX: return isnan(acc) ? acc : isnan(x) || x > acc ? x : acc; /* NaN wins */
    case MIN: return isnan(acc) ? acc : isnan(x) || x < acc ? x : acc;
    case PROD: return acc * x;
    case L1: return acc + fabs(x);
    case L2:
    case SUM_SQUARE: return acc + x * x;
    default: return acc + x; /* LOG_SUM; LOG_SUM_EXP folds e^(x - max) */
    }
}

static d5_status reduction_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    reduction *r = state;
    double *y = out[0].data, *m = r->scratch;
    for (int64_t o = 0; o < r->nout; o++) y[o] = start(r->kind);
    if (r->kind == LOG_SUM_EXP) { /* the largest element of each set first */
        for (int64_t o = 0; o < r->nout; o++) m[o] = -INFINITY;
        for (int64_t i = 0; i < in[0].numel; i++) {
            int64_t o = d5__reduce_index(&r->plan, i);
            m[o] = fold(MAX, m[o], in[0].data[i]);
        }
        for (int64_t i = 0; i < in[0].numel; i++) {
            int64_t o = d5__reduce_index(&r->plan, i);
            if (isfinite(m[o])) y[o] += exp(in[0].data[i] - m[o]);
        }
        for (int64_t o = 0; o < r->nout; o++) y[o] = isfinite(m[o]) ? m[o] + log(y[o]) : m[o];
        d5__wrap_ints(&out[0]);
        return D5_OK;
    }
    for (int64_t i = 0; i < in[0].numel; i++) {
        int64_t o = d5__reduce_index(&r->plan, i);
        y[o] = fold(r->kind, y[o], in[0].data[i]);
    }
    for (int64_t o = 0; o < r->nout; o++) {
        if (r->kind == L2) y[o] = sqrt(y[o]);
        if (r->kind == LOG_SUM) y[o] = log(y[o]);
        if (out[0].desc->dtype == D5_BOOL) y[o] = y[o] > 0; /* an empty set's -inf is false */
    }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* ReduceProd: dy/dx_i is the product of the other elements of its set. Per
 * set, count the zeros and multiply the nonzero elements; then an element
 * gets prod / x_i when its set has no zero, the product of the nonzero ones
 * when it is the set's only zero, and 0 otherwise. */
static void prod_backward(reduction *r, const d5_rt *gout, const d5_rt *in, d5_rt *gin)
{
    double *zeros = r->scratch, *nonzero = r->scratch + r->nout;
    for (int64_t o = 0; o < r->nout; o++) {
        zeros[o] = 0;
        nonzero[o] = 1;
    }
    for (int64_t i = 0; i < in[0].numel; i++) {
        int64_t o = d5__reduce_index(&r->plan, i);
        double x = in[0].data[i];
        if (x == 0)
            zeros[o] += 1;
        else
            nonzero[o] *= x;
    }
    for (int64_t i = 0; i < in[0].numel; i++) {
        int64_t o = d5__reduce_index(&r->plan, i);
        double x = in[0].data[i], d = 0;
        if (zeros[o] == 0)
            d = nonzero[o] / x;
        else if (zeros[o] == 1 && x == 0)
            d = nonzero[o];
        gin[0].data[i] += gout[0].data[o] * d;
    }
}

static d5_status reduction_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    reduction *r = state;
    if (!gin[0].data) return D5_OK;
    if (r->kind == PROD) {
        prod_backward(r, gout, in, gin);
        return D5_OK;
    }
    double *taken = r->scratch; /* MAX, MIN: 1 once an output's element has its gradient */
    for (int64_t o = 0; o < r->nout; o++) taken[o] = 0;
    for (int64_t i = 0; i < in[0].numel; i++) {
        int64_t o = d5__reduce_index(&r->plan, i);
        double x = in[0].data[i], y = out[0].data[o], g = gout[0].data[o], d = 0;
        switch (r->kind) {
        case MAX:
        case MIN:
            if (!taken[o] && (x == y || (isnan(x) && isnan(y)))) {
                taken[o] = 1;
                d = 1;
            }
            break;
        case L1: d = x > 0 ? 1 : x < 0 ? -1 : 0; break;
        case L2: d = y != 0 ? x / y : 0; break;
        case SUM_SQUARE: d = 2 * x; break;
        case LOG_SUM: d = exp(-y); break;
        case LOG_SUM_EXP: d = exp(x - y); break;
        default: break;
        }
        gin[0].data[i] += g * d;
    }
    return D5_OK;
}

#define REDUCTION(NAME, KIND)                                                                      \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return reduction_create(#NAME, KIND, args->inputs, args->ninputs, args->attrs,             \
                                args->outputs, state);                                             \
    }                                                                                              \
    D5_REF_OPERATOR(NAME, 1, 2, 1, 1, NAME##_create, reduction_forward, reduction_backward, NULL,  \
                    d5__flops_per_input)

REDUCTION(ReduceMax, MAX);
REDUCTION(ReduceMin, MIN);
REDUCTION(ReduceProd, PROD);
REDUCTION(ReduceL1, L1);
REDUCTION(ReduceL2, L2);
REDUCTION(ReduceSumSquare, SUM_SQUARE);
REDUCTION(ReduceLogSum, LOG_SUM);
REDUCTION(ReduceLogSumExp, LOG_SUM_EXP);
