/* Unique (ONNX opset 11): the unique elements of X (any data type), or with
 * the attribute axis (negative counts from the back) its unique slices along
 * that axis, compared element by element in row-major order. Outputs, each
 * but the first optional: Y, the unique elements (a 1-d tensor) or slices (X's
 * shape with the count along axis); indices (int64), where each first occurs
 * in X; inverse_indices (int64), for each element or slice of X its position
 * in Y; counts (int64), how often each occurs. With sorted = 1 (the default) Y
 * is in ascending order (slices lexicographically), as numpy.unique returns
 * it; with sorted = 0 in the order of first occurrence. NaN sorts last and
 * equals NaN. The output shapes depend on X's values, so X must be known at
 * create (a constant or initializer): otherwise D5_ERR_UNSUPPORTED. No
 * gradient.
 * https://onnx.ai/onnx/operators/onnx__Unique.html */
#include "extra.h"

typedef struct unique {
    int64_t outer, n, inner; /* X as [outer, n, inner]: n slices of outer x inner elements */
    int sorted;
    int64_t count; /* unique slices found at create */
    /* n entries each, in one block that starts at order: */
    int64_t *order;          /* slice indices, sorted (stable) */
    int64_t *group;          /* the position in Y of each slice */
    int64_t *first, *counts; /* per slice of Y: its first occurrence, its occurrences */
    int64_t *rank, *newpos, *first2, *counts2; /* scratch of the unsorted order */
} unique;

static void unique_destroy(void *state)
{
    unique *u = state;
    if (!u) return;
    d5_free(u->order);
    d5_free(u);
}

/* The context of the sort: slices of x. */
typedef struct slices {
    const double *x;
    int64_t outer, n, inner;
} slices;

static int slice_cmp(const void *ctx, int64_t a, int64_t b)
{
    const slices *s = ctx;
    for (int64_t o = 0; o < s->outer; o++)
        for (int64_t i = 0; i < s->inner; i++) {
            int c = d5__cmp_double(s->x[(o * s->n + a) * s->inner + i],
                                   s->x[(o * s->n + b) * s->inner + i]);
            if (c) return c;
        }
    return 0;
}

static int first_cmp(const void *ctx, int64_t a, int64_t b)
{
    const int64_t *first = ctx;
    return (first[a] > first[b]) - (first[a] < first[b]);
}

/* Finds the unique slices of x: fills u's arrays and u->count. */
static d5_status unique_run(unique *u, const double *x)
{
    slices ctx = {x, u->outer, u->n, u->inner};
    for (int64_t k = 0; k < u->n; k++) u->order[k] = k;
    d5_status s = d5__sort_indices(u->order, u->n, slice_cmp, &ctx);
    if (s != D5_OK) return s;
    /* Groups of equal slices in sorted order; the first of each is its first
     * occurrence, as the sort is stable. */
    int64_t g = -1;
    for (int64_t k = 0; k < u->n; k++) {
        if (k == 0 || slice_cmp(&ctx, u->order[k - 1], u->order[k]) != 0) {
            g++;
            u->first[g] = u->order[k];
            u->counts[g] = 0;
        }
        u->group[u->order[k]] = g;
        u->counts[g]++;
    }
    u->count = g + 1;
    if (u->sorted) return D5_OK;
    /* Order of first occurrence: rank[p] is the group at position p. */
    for (int64_t p = 0; p < u->count; p++) u->rank[p] = p;
    s = d5__sort_indices(u->rank, u->count, first_cmp, u->first);
    if (s != D5_OK) return s;
    for (int64_t p = 0; p < u->count; p++) {
        u->newpos[u->rank[p]] = p;
        u->first2[p] = u->first[u->rank[p]];
        u->counts2[p] = u->counts[u->rank[p]];
    }
    for (int64_t k = 0; k < u->n; k++) u->group[k] = u->newpos[u->group[k]];
    int64_t *t = u->first;
    u->first = u->first2;
    u->first2 = t;
    t = u->counts;
    u->counts = u->counts2;
    u->counts2 = t;
    return D5_OK;
}

static d5_status unique_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t nout = args->noutputs;
    d5_status s = d5__need_types("Unique", in, nin, 0, D5__ANY);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int64_t sorted, axis;
    int32_t ax = -1;
    s = d5_attrs_int(attrs, "sorted", 1, &sorted);
    if (s == D5_OK && d5_attrs_find(attrs, "axis")) {
        s = d5_attrs_int(attrs, "axis", 0, &axis);
        if (s == D5_OK) s = d5__axis("Unique", axis, x->ndim, &ax);
    }
    double *values = NULL;
    int64_t numel = 0;
    if (s == D5_OK) s = d5__known_values("Unique", in, nin, 0, "X", &values, &numel);
    if (s != D5_OK) return s;
    unique *u = d5_calloc(1, sizeof *u, "Unique");
    if (!u) {
        d5_free(values);
        return D5_ERR_NOMEM;
    }
    u->outer = u->inner = 1;
    u->n = numel;
    if (ax >= 0) {
        u->n = x->shape[ax];
        for (int32_t d = 0; d < ax; d++) u->outer *= x->shape[d];
        for (int32_t d = ax + 1; d < x->ndim; d++) u->inner *= x->shape[d];
    }
    u->sorted = sorted != 0;
    size_t n = (size_t)(u->n ? u->n : 1);
    u->order = d5_alloc(8 * n * sizeof(int64_t), "Unique");
    if (!u->order) s = D5_ERR_NOMEM;
    if (s == D5_OK) {
        int64_t **parts[] = {&u->group,  &u->first,  &u->counts, &u->rank,
                             &u->newpos, &u->first2, &u->counts2};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
            *parts[k] = u->order + (k + 1) * n;
        s = unique_run(u, values);
    }
    d5_free(values);
    if (s != D5_OK) {
        unique_destroy(u);
        return s;
    }
    *state = u;
    out[0] = *x;
    if (ax >= 0) {
        out[0].shape[ax] = u->count;
    } else {
        out[0].ndim = 1;
        out[0].shape[0] = u->count;
    }
    for (int32_t i = 1; i < nout; i++) {
        out[i].dtype = D5_I64;
        out[i].ndim = 1;
        out[i].shape[0] = i == 2 ? u->n : u->count;
    }
    return D5_OK;
}

static d5_status unique_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t nout = call->noutputs;
    unique *u = state;
    int64_t count = u->count;
    d5_status s = unique_run(u, in[0].data);
    if (s != D5_OK) return s;
    if (u->count != count)
        return d5_error(D5_ERR_SHAPE,
                        "Unique: input X has %lld unique %s, but %lld at create, which sized the "
                        "outputs",
                        (long long)u->count, u->outer * u->inner > 1 ? "slices" : "elements",
                        (long long)count);
    int64_t y = 0;
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t j = 0; j < u->count; j++)
            for (int64_t i = 0; i < u->inner; i++)
                out[0].data[y++] = in[0].data[(o * u->n + u->first[j]) * u->inner + i];
    for (int64_t j = 0; nout > 1 && j < u->count; j++) out[1].data[j] = (double)u->first[j];
    for (int64_t k = 0; nout > 2 && k < u->n; k++) out[2].data[k] = (double)u->group[k];
    for (int64_t j = 0; nout > 3 && j < u->count; j++) out[3].data[j] = (double)u->counts[j];
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Unique, 1, 1, 1, 4, unique_create, unique_forward, unique_destroy,
                            NULL);
