/* TopK (ONNX opset 11; opsets 1 and 10 read as the spec has them): the K
 * largest (largest = 1, the default) or smallest (largest = 0) elements of X
 * (any numeric type) along axis (default -1; negative counts from the back):
 * outputs Values (X's data type) and Indices (int64), both of X's shape with K
 * along axis. K is input 1 (an int64 tensor of one value) from opset 10 and
 * the attribute k before; it must be known at create, as it decides the
 * output shape, and lie in [0, shape[axis]]. The elements come out ordered
 * (largest first, or smallest first), equal ones by lower index first, as
 * the spec asks when sorted = 1; sorted = 0 allows any order and gets the
 * same. NaN counts as larger than any number, as numpy sorts it. The gradient
 * of Values flows back to the elements chosen; Indices have none.
 * https://onnx.ai/onnx/operators/onnx__TopK.html */
#include "extra.h"

typedef struct topk {
    int64_t outer, n, inner, k;
    int largest;
    int64_t idx[]; /* n entries: one row's element order */
} topk;

static d5_status topk_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t opset, axis, largest, sorted, k = 0, nk = 1;
    int32_t ax;
    d5_status s = d5__need_types("TopK", in, nin, 0, D5__NUMBERS);
    if (s == D5_OK) s = d5__ref_opset("TopK", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_int(attrs, "largest", 1, &largest);
    if (s == D5_OK) s = d5_attrs_int(attrs, "sorted", 1, &sorted);
    if (s == D5_OK && opset < 10) {
        if (!d5_attrs_find(attrs, "k"))
            return d5_error(D5_ERR_INVALID, "TopK: attribute k is required before opset 10");
        s = d5_attrs_int(attrs, "k", 0, &k);
    } else if (s == D5_OK) {
        s = d5__const_ints("TopK", in, nin, 1, "K", &k, 1, &nk);
        if (s == D5_OK && nk != 1)
            return d5_error(D5_ERR_INVALID, "TopK: input 1 (K) holds no value, expected one");
    }
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 1) return d5_error(D5_ERR_SHAPE, "TopK: input X is a scalar, expected rank >= 1");
    if ((s = d5__axis("TopK", axis, x->ndim, &ax)) != D5_OK) return s;
    if (k < 0 || k > x->shape[ax])
        return d5_error(D5_ERR_INVALID, "TopK: K is %lld, expected 0 to %lld (axis %d's size)",
                        (long long)k, (long long)x->shape[ax], (int)ax);
    topk *t = d5_alloc(sizeof *t + (size_t)x->shape[ax] * sizeof(int64_t), "TopK");
    if (!t) return D5_ERR_NOMEM;
    t->outer = t->inner = 1;
    t->n = x->shape[ax];
    t->k = k;
    t->largest = largest != 0;
    for (int32_t d = 0; d < ax; d++) t->outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) t->inner *= x->shape[d];
    *state = t;
    for (int32_t i = 0; i < 2; i++) {
        out[i] = *x;
        out[i].shape[ax] = k;
    }
    out[1].dtype = D5_I64;
    return D5_OK;
}

/* The context of one row's sort. */
typedef struct row {
    const double *x; /* the row's first element */
    int64_t inner;   /* the distance between its elements */
    int largest;
} row;

static int row_cmp(const void *ctx, int64_t a, int64_t b)
{
    const row *r = ctx;
    int c = d5__cmp_double(r->x[a * r->inner], r->x[b * r->inner]);
    return r->largest ? -c : c;
}

static d5_status topk_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    topk *t = state;
    for (int64_t o = 0; o < t->outer; o++)
        for (int64_t i = 0; i < t->inner; i++) {
            row r = {in[0].data + o * t->n * t->inner + i, t->inner, t->largest};
            for (int64_t j = 0; j < t->n; j++) t->idx[j] = j;
            d5_status s = d5__sort_indices(t->idx, t->n, row_cmp, &r);
            if (s != D5_OK) return s;
            for (int64_t j = 0; j < t->k; j++) {
                int64_t y = (o * t->k + j) * t->inner + i;
                out[0].data[y] = r.x[t->idx[j] * t->inner];
                out[1].data[y] = (double)t->idx[j];
            }
        }
    return D5_OK;
}

static d5_status topk_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const topk *t = state;
    if (!gin[0].data) return D5_OK;
    for (int64_t o = 0; o < t->outer; o++)
        for (int64_t j = 0; j < t->k; j++)
            for (int64_t i = 0; i < t->inner; i++) {
                int64_t y = (o * t->k + j) * t->inner + i;
                int64_t src = (int64_t)out[1].data[y];
                gin[0].data[(o * t->n + src) * t->inner + i] += gout[0].data[y];
            }
    return D5_OK;
}

D5_REF_OPERATOR(TopK, 1, 2, 2, 2, topk_create, topk_forward, topk_backward, NULL, NULL);
