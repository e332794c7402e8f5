/* TreeEnsemble (ONNX-ML, domain ai.onnx.ml, opset 5): the sum (or average,
 * minimum, maximum: aggregate_function 1, 0, 2, 3) of the leaves an ensemble
 * of decision trees reaches for each row of X [N, F] (float32, float64 or
 * float16), per target: Y is [N, n_targets], of X's type.
 *
 * The nodes_* attributes describe the interior nodes, one entry a node: the
 * feature compared, the split, the mode (nodes_modes, a uint8 tensor: 0 <=,
 * 1 <, 2 >=, 3 >, 4 ==, 5 !=, 6 member of a set), and for each branch a node
 * or, where nodes_trueleafs / nodes_falseleafs is 1, a leaf (an index into
 * leaf_targetids and leaf_weights). tree_roots names each tree's first node; a
 * root whose two branches are one leaf is that leaf. A NaN feature takes the
 * true branch where nodes_missing_value_tracks_true is 1, else what its
 * comparison gives (false but for !=). Mode 6 nodes take, in the order of
 * their positions in nodes_*, the sets of membership_values, each ended by a
 * NaN. Comparisons are made in double, as ONNX's reference makes them.
 *
 * AVERAGE divides every leaf by the number of trees; MIN and MAX start from
 * the type's largest and lowest finite values (a target no leaf reaches keeps
 * them), as ONNX's reference. post_transform (0 none, 1 softmax over a row's
 * targets, 2 logistic, 3 softmax_zero, 4 probit) is applied as ONNX Runtime
 * applies it, with the formulas of ONNX's reference classifiers (probit by
 * their approximate inverse erf); ONNX's reference TreeEnsemble itself
 * ignores it. nodes_hitrates is read by nobody. The attributes ONNX gives as
 * tensors (nodes_modes, nodes_splits, leaf_weights, membership_values) may
 * also be lists of ints or floats (d5's test cases). The trees are checked at
 * create: indices in range, no cycle. No gradient (the output is piecewise
 * constant).
 * https://onnx.ai/onnx/operators/onnx_aionnxml_TreeEnsemble.html */
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define OP "TreeEnsemble"

enum { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER };
enum { AVERAGE, SUM, MIN, MAX };
enum { NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT };

/* A branch: a node index >= 0, or leaf k as -(k + 1). */
typedef struct tnode {
    int64_t feature, branch[2]; /* [0]: true, [1]: false */
    double split;
    int mode, nan_true;
    int64_t set, set_len; /* mode MEMBER: members[set .. set + set_len - 1], sorted */
} tnode;

typedef struct ensemble {
    int64_t nnodes, nleaves, ntrees, ntargets, nfeatures;
    int aggregate, post;
    double start; /* MIN and MAX: the value a target starts from */
    double work;  /* comparisons a row: the trees' depths */
    tnode *nodes;
    int64_t *roots, *targets;
    double *weights, *members;
} ensemble;

static void ensemble_destroy(void *state)
{
    ensemble *e = state;
    if (!e) return;
    d5_free(e->nodes);
    d5_free(e->roots);
    d5_free(e->targets);
    d5_free(e->weights);
    d5_free(e->members);
    d5_free(e);
}

/* A list of numbers: a TENSOR of any number type, or INTS or FLOATS, as
 * doubles in new memory (d5_free); *n = -1 and *v NULL when absent. */
static d5_status read_numbers(const d5_attrs *attrs, const char *name, double **v, int64_t *n)
{
    const d5_attr *a = d5_attrs_find(attrs, name);
    *v = NULL;
    *n = -1;
    if (!a) return D5_OK;
    int64_t count;
    if (a->type == D5_ATTR_TENSOR && a->tensor) {
        if (!d5__in_types(a->tensor->desc.dtype, D5__NUMBERS))
            return d5_error(D5_ERR_UNSUPPORTED,
                            OP ": attribute %s has data type %s; expected "
                               "numbers",
                            name, d5_dtype_name((d5_dtype)a->tensor->desc.dtype));
        count = d5_tensor_desc_numel(&a->tensor->desc);
    } else if (a->type == D5_ATTR_INTS || a->type == D5_ATTR_FLOATS) {
        count = a->count;
    } else {
        return d5_error(D5_ERR_INVALID, OP ": attribute %s must be a tensor (or a list of numbers)",
                        name);
    }
    if (!(*v = d5_calloc((size_t)(count > 0 ? count : 1), sizeof **v, name))) return D5_ERR_NOMEM;
    *n = count;
    if (a->type == D5_ATTR_TENSOR)
        return d5_convert(a->tensor->data, (d5_dtype)a->tensor->desc.dtype, *v, D5_F64,
                          (size_t)count);
    for (int64_t k = 0; k < count; k++)
        (*v)[k] = a->type == D5_ATTR_INTS ? (double)a->ints[k] : a->floats[k];
    return D5_OK;
}

/* A required INTS attribute of `want` values (want < 0: any number, given
 * back in *n). */
static d5_status read_ints(const d5_attrs *attrs, const char *name, int required, int64_t want,
                           const int64_t **v, int64_t *n)
{
    d5_status s = d5_attrs_ints(attrs, name, v, n);
    if (s != D5_OK) return s;
    if (!*v && !required) return D5_OK;
    if (!*v) return d5_error(D5_ERR_INVALID, OP ": attribute %s (ints) is required", name);
    if (want >= 0 && *n != want)
        return d5_error(D5_ERR_INVALID,
                        OP ": attribute %s has %lld values; expected %lld, one a %s", name,
                        (long long)*n, (long long)want, name[0] == 'l' ? "leaf" : "node");
    return D5_OK;
}

static int compare_doubles(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Gives each MEMBER node, in node order, its NaN-ended set of
 * membership_values, sorted for a binary search. */
static d5_status assign_sets(ensemble *e, int64_t nvalues)
{
    int64_t at = 0, used = 0;
    for (int64_t k = 0; k < e->nnodes; k++) {
        tnode *t = &e->nodes[k];
        if (t->mode != MEMBER) continue;
        int64_t end = at;
        while (end < nvalues && !isnan(e->members[end])) end++;
        if (nvalues < 0)
            return d5_error(D5_ERR_INVALID,
                            OP ": membership_values is required: node %lld has mode 6 "
                               "(BRANCH_MEMBER)",
                            (long long)k);
        if (end == nvalues)
            return d5_error(D5_ERR_INVALID,
                            OP ": membership_values has no NaN-ended set left for node %lld, of "
                               "mode 6 (BRANCH_MEMBER); each set ends with a NaN",
                            (long long)k);
        t->set = at;
        t->set_len = end - at;
        qsort(e->members + at, (size_t)t->set_len, sizeof *e->members, compare_doubles);
        at = end + 1;
        used++;
    }
    for (; used > 0 && at < nvalues; at++)
        if (!isnan(e->members[at]))
            return d5_error(D5_ERR_INVALID,
                            OP ": membership_values has values after the %lld sets of its mode 6 "
                               "(BRANCH_MEMBER) nodes",
                            (long long)used);
    return D5_OK;
}

/* The nodes from the attributes, each checked. */
static d5_status read_nodes(ensemble *e, const d5_attrs *attrs)
{
    static const char *const id_names[2] = {"nodes_truenodeids", "nodes_falsenodeids"};
    static const char *const leaf_names[2] = {"nodes_trueleafs", "nodes_falseleafs"};
    double *modes = NULL, *splits = NULL;
    int64_t n = 0, nsplits = 0;
    const int64_t *feature, *ids[2], *leafs[2], *nan_true;
    d5_status s = read_numbers(attrs, "nodes_modes", &modes, &n);
    if (s == D5_OK && n < 0) s = d5_error(D5_ERR_INVALID, OP ": attribute nodes_modes is required");
    if (s == D5_OK) s = read_numbers(attrs, "nodes_splits", &splits, &nsplits);
    if (s == D5_OK && nsplits != n)
        s = d5_error(D5_ERR_INVALID, OP ": nodes_splits has %lld values, nodes_modes %lld",
                     (long long)nsplits, (long long)n);
    int64_t got;
    if (s == D5_OK) s = read_ints(attrs, "nodes_featureids", 1, n, &feature, &got);
    for (int b = 0; b < 2; b++) {
        if (s == D5_OK) s = read_ints(attrs, id_names[b], 1, n, &ids[b], &got);
        if (s == D5_OK) s = read_ints(attrs, leaf_names[b], 1, n, &leafs[b], &got);
    }
    if (s == D5_OK) s = read_ints(attrs, "nodes_missing_value_tracks_true", 0, n, &nan_true, &got);
    if (s == D5_OK && !(e->nodes = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *e->nodes, OP)))
        s = D5_ERR_NOMEM;
    e->nnodes = n;
    for (int64_t k = 0; s == D5_OK && k < n; k++) {
        tnode *t = &e->nodes[k];
        t->mode = (int)modes[k];
        t->split = splits[k];
        t->feature = feature[k];
        t->nan_true = nan_true && nan_true[k] != 0;
        if (!(modes[k] >= LEQ && modes[k] <= MEMBER && modes[k] == t->mode))
            s = d5_error(D5_ERR_INVALID, OP ": nodes_modes[%lld] is %g; expected 0 to 6",
                         (long long)k, modes[k]);
        for (int b = 0; s == D5_OK && b < 2; b++) {
            int64_t limit = leafs[b][k] ? e->nleaves : n, id = ids[b][k];
            if (id < 0 || id >= limit)
                s = d5_error(D5_ERR_RANGE, OP ": %s[%lld] is %lld, not a %s (0 to %lld)",
                             id_names[b], (long long)k, (long long)id,
                             leafs[b][k] ? "leaf" : "node", (long long)limit - 1);
            t->branch[b] = leafs[b][k] ? -(id + 1) : id;
        }
        int one_leaf = t->branch[0] < 0 && t->branch[0] == t->branch[1];
        if (s == D5_OK && !one_leaf && (t->feature < 0 || t->feature >= e->nfeatures))
            s = d5_error(D5_ERR_RANGE, OP ": nodes_featureids[%lld] is %lld; X has %lld features",
                         (long long)k, (long long)t->feature, (long long)e->nfeatures);
    }
    d5_free(modes);
    d5_free(splits);
    return s;
}

/* Checks that no node leads back to itself (Kahn's order) and sums the
 * depths of the trees into e->work. */
static d5_status check_acyclic(ensemble *e)
{
    int64_t n = e->nnodes;
    int64_t *indegree = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *indegree, OP);
    int64_t *order = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *order, OP);
    int64_t *depth = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *depth, OP);
    d5_status s = indegree && order && depth ? D5_OK : D5_ERR_NOMEM;
    int64_t head = 0, tail = 0;
    for (int64_t k = 0; s == D5_OK && k < n; k++)
        for (int b = 0; b < 2; b++)
            if (e->nodes[k].branch[b] >= 0) indegree[e->nodes[k].branch[b]]++;
    for (int64_t k = 0; s == D5_OK && k < n; k++)
        if (indegree[k] == 0) order[tail++] = k;
    while (s == D5_OK && head < tail) {
        const tnode *t = &e->nodes[order[head++]];
        for (int b = 0; b < 2; b++)
            if (t->branch[b] >= 0 && --indegree[t->branch[b]] == 0) order[tail++] = t->branch[b];
    }
    if (s == D5_OK && tail < n)
        s = d5_error(D5_ERR_INVALID,
                     OP ": the nodes form a cycle (%lld of %lld nodes are on or "
                        "below one)",
                     (long long)(n - tail), (long long)n);
    for (int64_t k = n - 1; s == D5_OK && k >= 0; k--) { /* children before parents */
        const tnode *t = &e->nodes[order[k]];
        for (int b = 0; b < 2; b++) {
            int64_t d = t->branch[b] >= 0 ? depth[t->branch[b]] : 0;
            if (d + 1 > depth[order[k]]) depth[order[k]] = d + 1;
        }
    }
    e->work = (double)e->ntargets;
    for (int64_t r = 0; s == D5_OK && r < e->ntrees; r++)
        if (e->roots[r] >= 0) e->work += (double)depth[e->roots[r]];
    d5_free(indegree);
    d5_free(order);
    d5_free(depth);
    return s;
}

/* The leaves, the roots and the members of the sets. */
static d5_status read_leaves(ensemble *e, const d5_attrs *attrs)
{
    const int64_t *targets, *roots;
    int64_t n, nroots, nmembers;
    d5_status s = read_numbers(attrs, "leaf_weights", &e->weights, &n);
    if (s == D5_OK && n < 0)
        s = d5_error(D5_ERR_INVALID, OP ": attribute leaf_weights is required");
    if (s == D5_OK) s = read_ints(attrs, "leaf_targetids", 1, n, &targets, &n);
    if (s == D5_OK) s = read_ints(attrs, "tree_roots", 1, -1, &roots, &nroots);
    if (s == D5_OK) s = read_numbers(attrs, "membership_values", &e->members, &nmembers);
    if (s != D5_OK) return s;
    if (nroots < 1) return d5_error(D5_ERR_INVALID, OP ": tree_roots is empty; expected a tree");
    e->nleaves = n;
    e->ntrees = nroots;
    e->targets = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *e->targets, OP);
    e->roots = d5_calloc((size_t)nroots, sizeof *e->roots, OP);
    if (!e->targets || !e->roots) return D5_ERR_NOMEM;
    for (int64_t k = 0; k < n; k++) {
        if (targets[k] < 0 || targets[k] >= e->ntargets)
            return d5_error(D5_ERR_RANGE, OP ": leaf_targetids[%lld] is %lld; n_targets is %lld",
                            (long long)k, (long long)targets[k], (long long)e->ntargets);
        e->targets[k] = targets[k];
    }
    if ((s = read_nodes(e, attrs)) != D5_OK) return s;
    for (int64_t r = 0; r < nroots; r++) {
        if (roots[r] < 0 || roots[r] >= e->nnodes)
            return d5_error(D5_ERR_RANGE, OP ": tree_roots[%lld] is %lld, not a node (0 to %lld)",
                            (long long)r, (long long)roots[r], (long long)e->nnodes - 1);
        const tnode *t = &e->nodes[roots[r]];
        e->roots[r] = t->branch[0] < 0 && t->branch[0] == t->branch[1] ? t->branch[0] : roots[r];
    }
    return assign_sets(e, nmembers);
}

static d5_status ensemble_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s =
        d5__need_types(OP, in, args->ninputs, 0, D5__DT(D5_F32) | D5__DT(D5_F64) | D5__DT(D5_F16));
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim != 2)
        return d5_error(D5_ERR_SHAPE, OP ": input X has %d dims; expected 2, [N, F]", (int)x->ndim);
    int64_t ntargets, aggregate, post;
    s = d5_attrs_int(attrs, "n_targets", -1, &ntargets);
    if (s == D5_OK) s = d5_attrs_int(attrs, "aggregate_function", SUM, &aggregate);
    if (s == D5_OK) s = d5_attrs_int(attrs, "post_transform", NONE, &post);
    if (s != D5_OK) return s;
    if (ntargets < 1)
        return d5_error(D5_ERR_INVALID, OP ": n_targets is %s; expected a number >= 1",
                        ntargets == -1 ? "missing" : "below 1");
    if (aggregate < AVERAGE || aggregate > MAX)
        return d5_error(D5_ERR_INVALID,
                        OP ": aggregate_function is %lld; expected 0 (AVERAGE), 1 (SUM), 2 (MIN) "
                           "or 3 (MAX)",
                        (long long)aggregate);
    if (post < NONE || post > PROBIT)
        return d5_error(D5_ERR_INVALID,
                        OP ": post_transform is %lld; expected 0 (NONE), 1 (SOFTMAX), 2 "
                           "(LOGISTIC), 3 (SOFTMAX_ZERO) or 4 (PROBIT)",
                        (long long)post);
    ensemble *e = d5_calloc(1, sizeof *e, OP);
    if (!e) return D5_ERR_NOMEM;
    e->ntargets = ntargets;
    e->nfeatures = x->shape[1];
    e->aggregate = (int)aggregate;
    e->post = (int)post;
    double largest = x->dtype == D5_F32 ? FLT_MAX : x->dtype == D5_F64 ? DBL_MAX : 65504.0;
    e->start = aggregate == MIN ? largest : -largest;
    s = read_leaves(e, attrs);
    if (s == D5_OK) s = check_acyclic(e);
    if (s != D5_OK) {
        ensemble_destroy(e);
        return s;
    }
    *state = e;
    d5_tensor_desc *y = &args->outputs[0];
    *y = *x;
    y->shape[1] = ntargets;
    return D5_OK;
}

/* 1 when x takes node t's true branch. */
static int goes_true(const ensemble *e, const tnode *t, double x)
{
    if (isnan(x) && t->nan_true) return 1;
    switch (t->mode) {
    case LEQ: return x <= t->split;
    case LT: return x < t->split;
    case GTE: return x >= t->split;
    case GT: return x > t->split;
    case EQ: return x == t->split;
    case NEQ: return x != t->split;
    default:
        return !isnan(x) && t->set_len > 0 && /* NaN is no member */
               bsearch(&x, e->members + t->set, (size_t)t->set_len, sizeof x, compare_doubles) !=
                   NULL;
    }
}

/* ONNX's reference classifiers' approximate inverse erf. */
static double erf_inv(double x)
{
    double sgn = x < 0 ? -1.0 : 1.0;
    x = (1.0 - x) * (1.0 + x);
    if (x == 0) return 0;
    double lg = log(x), v = 2.0 / (3.14159265358979323846 * 0.147) + 0.5 * lg,
           v2 = 1.0 / 0.147 * lg;
    return sgn * sqrt(-v + sqrt(v * v - v2));
}

static void transform(int post, double *y, int64_t n)
{
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) top = y[j] > top ? y[j] : top;
    switch (post) {
    case SOFTMAX:
        for (int64_t j = 0; j < n; j++) sum += y[j] = exp(y[j] - top);
        for (int64_t j = 0; j < n; j++) y[j] /= sum;
        break;
    case SOFTMAX_ZERO: /* zeros stay zero (scaled by exp(-max)) */
        for (int64_t j = 0; j < n; j++) {
            y[j] = y[j] > 1e-7 || y[j] < -1e-7 ? exp(y[j] - top) : y[j] * exp(-top);
            sum += y[j];
        }
        for (int64_t j = 0; j < n; j++) y[j] = sum == 0 ? 0.5 : y[j] / sum;
        break;
    case LOGISTIC:
        for (int64_t j = 0; j < n; j++) {
            double v = 1.0 / (1.0 + exp(-fabs(y[j])));
            y[j] = y[j] < 0 ? 1.0 - v : v;
        }
        break;
    case PROBIT:
        for (int64_t j = 0; j < n; j++) y[j] = 1.41421356 * erf_inv(y[j] * 2 - 1);
        break;
    default: break;
    }
}

static d5_status ensemble_forward(void *state, const d5_ref_call *call)
{
    const ensemble *e = state;
    const double *x = call->inputs[0].data;
    double *y = call->outputs[0].data;
    int64_t rows = call->inputs[0].desc->shape[0], nt = e->ntargets;
    for (int64_t r = 0; r < rows; r++) {
        const double *row = x + r * e->nfeatures;
        double *out = y + r * nt;
        for (int64_t j = 0; j < nt; j++)
            out[j] = e->aggregate == MIN || e->aggregate == MAX ? e->start : 0.0;
        for (int64_t t = 0; t < e->ntrees; t++) {
            int64_t b = e->roots[t];
            while (b >= 0) {
                const tnode *node = &e->nodes[b];
                b = node->branch[goes_true(e, node, row[node->feature]) ? 0 : 1];
            }
            int64_t leaf = -b - 1;
            double w = e->weights[leaf], *o = &out[e->targets[leaf]];
            switch (e->aggregate) {
            case AVERAGE: *o += w / (double)e->ntrees; break;
            case SUM: *o += w; break;
            case MIN: *o = w < *o ? w : *o; break;
            default: *o = w > *o ? w : *o; break;
            }
        }
        transform(e->post, out, nt);
    }
    return D5_OK;
}

static double ensemble_flops(void *state, const d5_ref_shapes *shapes)
{
    const ensemble *e = state;
    return (double)shapes->inputs[0].shape[0] * e->work;
}

D5_REF_OPERATOR_NO_BACKWARD(TreeEnsemble, 1, 1, 1, 1, ensemble_create, ensemble_forward,
                            ensemble_destroy, ensemble_flops);
