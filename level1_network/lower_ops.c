/* The rules of the control nodes that lower.c resolves at create: each
 * gives the node's outputs as tensors, sequences or optionals of the network
 * built, adding the tensor nodes it needs (a branch's, an iteration's, the
 * Gather that takes a scan input's step, the Concat that stacks a scan
 * output). https://onnx.ai/onnx/operators/ for the semantics. */
#include "lower_internal.h"

#include <stdio.h>
#include <string.h>

#define NAME_LEN 1024

typedef struct rule_args {
    d5__lowerer *L;
    const d5__node *n;
    const d5__scope *sc;
    const char *base, *label;
    const d5__lval *const *in;
    d5__lval *out;
} rule_args;

static const d5_network *graph_of(const d5__node *n, const char *attr)
{
    for (int32_t i = 0; i < n->ngraphs; i++)
        if (strcmp(n->graphs[i].attr, attr) == 0) return n->graphs[i].graph;
    return NULL;
}

static d5_status need_graph(const rule_args *r, const char *attr, const d5_network **g)
{
    *g = graph_of(r->n, attr);
    if (!*g) return d5_error(D5_ERR_INVALID, "%s: needs the graph attribute '%s'", r->label, attr);
    return D5_OK;
}

/* Input k as a tensor or a sequence, with a message naming it otherwise. */
static d5_status need(const rule_args *r, int32_t k, int32_t type, const d5__lval **v)
{
    *v = k < r->n->nin ? r->in[k] : NULL;
    if (!*v) return d5_error(D5_ERR_INVALID, "%s: input %d is missing", r->label, (int)k);
    if ((*v)->type != type)
        return d5_error(D5_ERR_INVALID, "%s: input '%s' is a %s, expected a %s", r->label,
                        r->n->inputs[k], d5_type_name((*v)->type), d5_type_name(type));
    return D5_OK;
}

static const d5_tensor_desc *known_desc(const rule_args *r, const char *name)
{
    const d5__value *v = d5__lower_value(r->L, name);
    return v && v->known ? &v->desc : NULL;
}

static d5_status need_desc(const rule_args *r, const char *name, const d5_tensor_desc **d)
{
    if (!(*d = known_desc(r, name)))
        return d5_error(D5_ERR_SHAPE, "%s: the shape of '%s' is not known at create", r->label,
                        name);
    return D5_OK;
}

static int32_t dtype_of(const rule_args *r, const char *name)
{
    const d5__value *v = d5__lower_value(r->L, name);
    return v ? v->desc.dtype : D5_DTYPE_INVALID;
}

/* Emits one node whose name and output name are fresh under base: *out
 * receives the output's name. */
static d5_status emit1(const rule_args *r, const char *op, const char *const *in, int32_t nin,
                       const d5_attr *attrs, int32_t nattrs, const char *what, char *out)
{
    char node[NAME_LEN + 64];
    d5__lower_fresh(r->L, r->base, what, out, NAME_LEN);
    snprintf(node, sizeof node, "%s", out);
    const char *outs[1] = {out};
    return d5__lower_emit(r->L, node, op, in, nin, outs, 1, attrs, nattrs);
}

/* An int64 constant under base (a scalar, or a vector of n). */
static d5_status const_i64(const rule_args *r, const char *what, const int64_t *v, int32_t n,
                           int scalar, char *name)
{
    d5__lower_fresh(r->L, r->base, what, name, NAME_LEN);
    return d5__lower_i64(r->L, name, v, n, scalar);
}

/* Element `index` of x along `axis`, that axis removed. */
static d5_status take(const rule_args *r, const char *x, int64_t index, int64_t axis, char *out)
{
    char idx[NAME_LEN];
    d5_status s = const_i64(r, "index", &index, 1, 1, idx);
    const char *in[2] = {x, idx};
    d5_attr a = d5__lower_int_attr("axis", axis);
    return s == D5_OK ? emit1(r, "Gather", in, 2, &a, 1, "take", out) : s;
}

/* Elements [start, end) of x along axis (Slice, opset 10 on). */
static d5_status slice(const rule_args *r, const char *x, int64_t start, int64_t end, int64_t axis,
                       char *out)
{
    char b[NAME_LEN], e[NAME_LEN], a[NAME_LEN];
    d5_status s = const_i64(r, "start", &start, 1, 0, b);
    if (s == D5_OK) s = const_i64(r, "end", &end, 1, 0, e);
    if (s == D5_OK) s = const_i64(r, "axis", &axis, 1, 0, a);
    const char *in[4] = {x, b, e, a};
    return s == D5_OK ? emit1(r, "Slice", in, 4, NULL, 0, "slice", out) : s;
}

/* Stacks tensors names[0..n-1] (of one shape) along a new axis `axis` (in
 * reverse order when reverse is set) into one tensor; decl, the declared
 * descriptor of an item, gives the shape of an empty stack. */
static d5_status stack(const rule_args *r, char *const *names, int32_t n, int64_t axis, int reverse,
                       const d5__value *decl, d5__lval *out)
{
    char buf[NAME_LEN];
    d5_status s = D5_OK;
    if (n == 0) {
        if (!decl || !decl->known)
            return d5_error(D5_ERR_SHAPE,
                            "%s: a scan output of no iterations, whose element shape is not "
                            "declared",
                            r->label);
        d5_tensor_desc d = decl->desc;
        int64_t a = axis < 0 ? axis + d.ndim + 1 : axis;
        if (a < 0 || a > d.ndim || d.ndim >= D5_MAX_DIMS)
            return d5_error(D5_ERR_INVALID, "%s: axis %lld is outside the output's rank", r->label,
                            (long long)axis);
        for (int32_t i = d.ndim; i > a; i--) d.shape[i] = d.shape[i - 1];
        d.shape[a] = 0;
        d.ndim++;
        d5_tensor t;
        s = d5_tensor_alloc(&d, &t);
        d5__lower_fresh(r->L, r->base, "empty", buf, sizeof buf);
        if (s == D5_OK) s = d5_network_add_initializer_take(r->L->out, buf, &t);
        return s == D5_OK ? d5__lval_tensor(out, buf) : s;
    }
    char **parts = d5_calloc((size_t)n, sizeof *parts, "stack");
    if (!parts) return D5_ERR_NOMEM;
    int64_t a = 0;
    for (int32_t i = 0; s == D5_OK && i < n; i++) {
        const char *item = names[reverse ? n - 1 - i : i];
        const d5_tensor_desc *d;
        s = need_desc(r, item, &d);
        if (s != D5_OK) break;
        a = axis < 0 ? axis + d->ndim + 1 : axis;
        if (a < 0 || a > d->ndim || d->ndim >= D5_MAX_DIMS) {
            s = d5_error(D5_ERR_INVALID, "%s: axis %lld is outside the rank %d + 1 of '%s'",
                         r->label, (long long)axis, (int)d->ndim, item);
            break;
        }
        int64_t shape[D5_MAX_DIMS];
        int zero = 0;
        for (int32_t k = 0, j = 0; k <= d->ndim; k++) {
            shape[k] = k == a ? 1 : d->shape[j++];
            zero |= shape[k] == 0;
        }
        char sh[NAME_LEN];
        s = const_i64(r, "shape", shape, d->ndim + 1, 0, sh);
        const char *in[2] = {item, sh};
        d5_attr allow = d5__lower_int_attr("allowzero", 1); /* a size 0 is a size, not "copy" */
        int with = zero && d5_network_opset(r->L->top, "") >= 14;
        if (s == D5_OK) s = emit1(r, "Reshape", in, 2, &allow, with, "unsqueeze", buf);
        if (s == D5_OK && !(parts[i] = d5_strdup(buf, "stack"))) s = D5_ERR_NOMEM;
    }
    d5_attr cat = d5__lower_int_attr("axis", a);
    if (s == D5_OK && n > 1)
        s = emit1(r, "Concat", (const char *const *)parts, n, &cat, 1, "stack", buf);
    if (s == D5_OK) s = d5__lval_tensor(out, n > 1 ? buf : parts[0]);
    for (int32_t i = 0; i < n; i++) d5_free(parts[i]);
    d5_free(parts);
    return s;
}

/* The declared value of output k of graph g (for an empty stack's shape). */
static const d5__value *declared_output(const d5_network *g, int32_t k)
{
    int32_t v = d5__network_value(g, g->outputs[k]);
    return v >= 0 ? &g->values[v] : NULL;
}

/* ---- If ----------------------------------------------------------------------------------- */

static d5_status lower_if(const rule_args *r)
{
    const d5_network *then_g, *else_g;
    const d5__lval *cond;
    d5_status s = need_graph(r, "then_branch", &then_g);
    if (s == D5_OK) s = need_graph(r, "else_branch", &else_g);
    if (s == D5_OK) s = need(r, 0, D5_TYPE_TENSOR, &cond);
    if (s != D5_OK) return s;
    char prefix[NAME_LEN];
    const d5__value *cv = d5__lower_value(r->L, cond->names[0]);
    int32_t nout = r->n->nout;
    if (cv && cv->kind == D5_VALUE_INITIALIZER) {
        int64_t c = 0;
        s = d5__lower_const_int(r->L, cond->names[0], r->label, "condition", &c);
        snprintf(prefix, sizeof prefix, "%s/%s/", r->base, c ? "then" : "else");
        return s == D5_OK ? d5__lower_graph(r->L, c ? then_g : else_g, r->sc, prefix, NULL, 0,
                                            r->out, nout, r->label)
                          : s;
    }
    /* Decided at run time: both branches computed, Where selects. */
    d5__lval *t = d5_calloc((size_t)nout * 2, sizeof *t, "branches"), *e = t + nout;
    if (!t) return D5_ERR_NOMEM;
    snprintf(prefix, sizeof prefix, "%s/then/", r->base);
    s = d5__lower_graph(r->L, then_g, r->sc, prefix, NULL, 0, t, nout, r->label);
    snprintf(prefix, sizeof prefix, "%s/else/", r->base);
    if (s == D5_OK) s = d5__lower_graph(r->L, else_g, r->sc, prefix, NULL, 0, e, nout, r->label);
    for (int32_t k = 0; s == D5_OK && k < nout; k++) {
        const d5_tensor_desc *a = NULL, *b = NULL;
        if (t[k].type == D5_TYPE_TENSOR && e[k].type == D5_TYPE_TENSOR) {
            a = known_desc(r, t[k].names[0]);
            b = known_desc(r, e[k].names[0]);
        }
        if (!a || !b || !d5__same_desc(a, b)) {
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "%s: its condition '%s' is computed at run time, so d5 computes both "
                         "branches and selects, which needs tensors of one known shape; output "
                         "'%s' differs between them",
                         r->label, r->n->inputs[0], r->n->outputs[k]);
            break;
        }
        char buf[NAME_LEN];
        const char *in[3] = {cond->names[0], t[k].names[0], e[k].names[0]};
        s = emit1(r, "Where", in, 3, NULL, 0, "select", buf);
        if (s == D5_OK) s = d5__lval_tensor(&r->out[k], buf);
    }
    for (int32_t k = 0; k < 2 * nout; k++) d5__lval_clear(&t[k]);
    d5_free(t);
    return s;
}

/* ---- Loop ----------------------------------------------------------------------------------- */

static d5_status lower_loop(const rule_args *r)
{
    const d5_network *body;
    d5_status s = need_graph(r, "body", &body);
    if (s != D5_OK) return s;
    const d5__node *n = r->n;
    int32_t N = n->nin - 2, K = body->noutputs - 1 - N;
    if (N < 0 || K < 0 || body->ninputs != N + 2)
        return d5_error(D5_ERR_INVALID,
                        "%s: %d inputs and a body of %d inputs and %d outputs do not match "
                        "(M, cond and N carried values in; cond, N values and scan outputs out)",
                        r->label, (int)n->nin, (int)body->ninputs, (int)body->noutputs);
    int has_m = r->in[0] != NULL, has_c = r->in[1] != NULL;
    int64_t m = 0, c = 1;
    if (has_m) s = d5__lower_const_int(r->L, r->in[0]->names[0], r->label, "trip count", &m);
    if (s == D5_OK && has_c)
        s = d5__lower_const_int(r->L, r->in[1]->names[0], r->label, "condition", &c);
    if (s == D5_OK && !has_m && !has_c)
        s = d5_error(D5_ERR_INVALID, "%s: no trip count and no condition: the loop never ends",
                     r->label);
    if (s != D5_OK) return s;
    d5__lval *state = d5_calloc((size_t)(N + 2) + (size_t)(1 + N + K) + (size_t)K + 1,
                                sizeof *state, "loop state");
    if (!state) return D5_ERR_NOMEM;
    d5__lval *res = state + N + 2, *scans = res + 1 + N + K;
    for (int32_t j = 0; s == D5_OK && j < N; j++) s = d5__lval_copy(r->in[2 + j], &state[2 + j]);
    char name[NAME_LEN], prefix[NAME_LEN];
    d5__scope body_sc;
    snprintf(prefix, sizeof prefix, "%s/", r->base);
    if (s == D5_OK)
        s = d5__lower_body_scope(r->L, body, r->sc, prefix, &body_sc);
    else
        memset(&body_sc, 0, sizeof body_sc);
    for (int64_t i = 0; s == D5_OK && (!has_m || i < m) && c; i++) {
        if ((s = d5__lower_budget(r->L, r->label)) != D5_OK) break;
        s = const_i64(r, "iteration", &i, 1, 1, name);
        if (s == D5_OK) s = d5__lval_tensor(&state[0], name);
        d5__lower_fresh(r->L, r->base, "condition", name, sizeof name);
        if (s == D5_OK) s = d5__lower_bool(r->L, name, 1);
        if (s == D5_OK) s = d5__lval_tensor(&state[1], name);
        snprintf(prefix, sizeof prefix, "%s/%lld/", r->base, (long long)i);
        if (s == D5_OK)
            s = d5__lower_graph(r->L, body, &body_sc, prefix, state, N + 2, res, 1 + N + K,
                                r->label);
        if (s != D5_OK) break;
        /* Without a condition input, the body's condition is not read. */
        if (has_c && res[0].type != D5_TYPE_TENSOR)
            s = d5_error(D5_ERR_INVALID, "%s: the body's condition is not a tensor", r->label);
        else if (has_c)
            s = d5__lower_const_int(r->L, res[0].names[0], r->label, "body's condition", &c);
        for (int32_t j = 0; j < N + 2; j++) d5__lval_clear(&state[j]);
        for (int32_t j = 0; j < N; j++) {
            state[2 + j] = res[1 + j];
            memset(&res[1 + j], 0, sizeof res[1 + j]);
        }
        for (int32_t k = 0; s == D5_OK && k < K; k++) {
            if (res[1 + N + k].type != D5_TYPE_TENSOR)
                s = d5_error(D5_ERR_UNSUPPORTED, "%s: scan output %d is a %s, not a tensor",
                             r->label, (int)k, d5_type_name(res[1 + N + k].type));
            else
                s = d5__lval_push(&scans[k], res[1 + N + k].names[0]);
        }
        for (int32_t j = 0; j < 1 + N + K; j++) d5__lval_clear(&res[j]);
    }
    for (int32_t j = 0; s == D5_OK && j < N && j < n->nout; j++) {
        r->out[j] = state[2 + j];
        memset(&state[2 + j], 0, sizeof state[2 + j]);
    }
    for (int32_t k = 0; s == D5_OK && k < K && N + k < n->nout; k++)
        s = stack(r, scans[k].names, scans[k].n, 0, 0, declared_output(body, 1 + N + k),
                  &r->out[N + k]);
    for (int32_t j = 0; j < (N + 2) + (1 + N + K) + K; j++) d5__lval_clear(&state[j]);
    d5_free(state);
    d5__scope_free(&body_sc);
    return s;
}

/* ---- Scan ----------------------------------------------------------------------------------- */

typedef struct scan_plan {
    const d5_network *body;
    int32_t N, M, K;
    const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs; /* NULL: zeros */
} scan_plan;

/* One scan over states st[0..N-1] and scan inputs xs[0..M-1] (tensor
 * names); out[0..N+K-1] receive the final states and the scan outputs. */
static d5_status scan_once(const rule_args *r, const scan_plan *p, const d5__scope *body_sc,
                           const char *base, const d5__lval *st, char *const *xs, d5__lval *out)
{
    int32_t N = p->N, M = p->M, K = p->K;
    int64_t len = -1;
    d5_status s = D5_OK;
    for (int32_t j = 0; s == D5_OK && j < M; j++) {
        const d5_tensor_desc *d;
        s = need_desc(r, xs[j], &d);
        int64_t a = p->in_axes ? p->in_axes[j] : 0;
        if (s == D5_OK && a < 0) a += d->ndim;
        if (s == D5_OK && (a < 0 || a >= d->ndim))
            s = d5_error(D5_ERR_INVALID, "%s: scan input '%s' has no axis %lld", r->label, xs[j],
                         (long long)(p->in_axes ? p->in_axes[j] : 0));
        if (s == D5_OK && len >= 0 && d->shape[a] != len)
            s = d5_error(D5_ERR_SHAPE, "%s: scan inputs of %lld and %lld steps", r->label,
                         (long long)len, (long long)d->shape[a]);
        if (s == D5_OK) len = d->shape[a];
    }
    if (s != D5_OK) return s;
    d5__lval *args =
        d5_calloc((size_t)(N + M) + (size_t)(N + K) + (size_t)K + 1, sizeof *args, "scan state");
    if (!args) return D5_ERR_NOMEM;
    d5__lval *res = args + N + M, *scans = res + N + K;
    for (int32_t j = 0; s == D5_OK && j < N; j++) s = d5__lval_copy(&st[j], &args[j]);
    char name[NAME_LEN], prefix[NAME_LEN];
    for (int64_t t = 0; s == D5_OK && t < len; t++) {
        s = d5__lower_budget(r->L, r->label);
        for (int32_t j = 0; s == D5_OK && j < M; j++) {
            int64_t a = p->in_axes ? p->in_axes[j] : 0;
            const d5_tensor_desc *d = known_desc(r, xs[j]);
            if (a < 0) a += d->ndim;
            int64_t step = p->in_dirs && p->in_dirs[j] ? len - 1 - t : t;
            s = take(r, xs[j], step, a, name);
            if (s == D5_OK) s = d5__lval_tensor(&args[N + j], name);
        }
        snprintf(prefix, sizeof prefix, "%s/%lld/", base, (long long)t);
        if (s == D5_OK)
            s = d5__lower_graph(r->L, p->body, body_sc, prefix, args, N + M, res, N + K, r->label);
        for (int32_t j = 0; j < N + M; j++) d5__lval_clear(&args[j]);
        for (int32_t j = 0; s == D5_OK && j < N; j++) {
            args[j] = res[j];
            memset(&res[j], 0, sizeof res[j]);
        }
        for (int32_t k = 0; s == D5_OK && k < K; k++) {
            if (res[N + k].type != D5_TYPE_TENSOR)
                s = d5_error(D5_ERR_UNSUPPORTED, "%s: scan output %d is not a tensor", r->label,
                             (int)k);
            else
                s = d5__lval_push(&scans[k], res[N + k].names[0]);
        }
        for (int32_t j = 0; j < N + K; j++) d5__lval_clear(&res[j]);
    }
    for (int32_t j = 0; s == D5_OK && j < N; j++) {
        out[j] = args[j];
        memset(&args[j], 0, sizeof args[j]);
    }
    for (int32_t k = 0; s == D5_OK && k < K; k++)
        s = stack(r, scans[k].names, scans[k].n, p->out_axes ? p->out_axes[k] : 0,
                  p->out_dirs && p->out_dirs[k], declared_output(p->body, N + k), &out[N + k]);
    for (int32_t j = 0; j < (N + M) + (N + K) + K; j++) d5__lval_clear(&args[j]);
    d5_free(args);
    return s;
}

/* Reads an INTS attribute of `count` values (none: NULL). */
static d5_status ints_attr(const rule_args *r, const char *name, int32_t count, const int64_t **v)
{
    int64_t n = 0;
    d5_status s = d5_attrs_ints(&r->n->attrs_view, name, v, &n);
    if (s == D5_OK && *v && n != count)
        s = d5_error(D5_ERR_INVALID, "%s: attribute '%s' has %lld values, expected %d", r->label,
                     name, (long long)n, (int)count);
    return s;
}

static d5_status lower_scan(const rule_args *r)
{
    scan_plan p;
    memset(&p, 0, sizeof p);
    int64_t m = -1;
    d5_status s = need_graph(r, "body", &p.body);
    if (s == D5_OK) s = d5_attrs_int(&r->n->attrs_view, "num_scan_inputs", -1, &m);
    if (s != D5_OK) return s;
    /* Opset 8: a first input sequence_lens and a batch axis on everything. */
    int batched = d5_network_opset(r->L->top, "") < 9;
    int32_t first = batched ? 1 : 0, nin = r->n->nin - first;
    if (m < 1 || m > nin)
        return d5_error(D5_ERR_INVALID, "%s: num_scan_inputs %lld with %d inputs", r->label,
                        (long long)m, (int)nin);
    p.M = (int32_t)m;
    p.N = nin - p.M;
    p.K = p.body->noutputs - p.N;
    if (p.K < 0 || p.body->ninputs != p.N + p.M)
        return d5_error(D5_ERR_INVALID,
                        "%s: a body of %d inputs and %d outputs for %d states "
                        "and %d scan inputs",
                        r->label, (int)p.body->ninputs, (int)p.body->noutputs, (int)p.N, (int)p.M);
    if (batched && r->in[0])
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: sequence_lens is not supported; d5 scans every "
                        "sequence to its end",
                        r->label);
    s = ints_attr(r, batched ? "directions" : "scan_input_directions", p.M, &p.in_dirs);
    if (s == D5_OK && !batched) s = ints_attr(r, "scan_input_axes", p.M, &p.in_axes);
    if (s == D5_OK && !batched) s = ints_attr(r, "scan_output_axes", p.K, &p.out_axes);
    if (s == D5_OK && !batched) s = ints_attr(r, "scan_output_directions", p.K, &p.out_dirs);
    const d5__lval *v;
    for (int32_t j = 0; s == D5_OK && j < nin; j++) s = need(r, first + j, D5_TYPE_TENSOR, &v);
    if (s != D5_OK) return s;
    int64_t batch = 1;
    if (batched) {
        const d5_tensor_desc *d;
        s = need_desc(r, r->in[1]->names[0], &d);
        if (s == D5_OK && d->ndim < 1)
            s = d5_error(D5_ERR_SHAPE, "%s: '%s' has no batch axis", r->label, r->in[1]->names[0]);
        if (s != D5_OK) return s;
        batch = d->shape[0];
    }
    char **xs = d5_calloc((size_t)p.M + 1, sizeof *xs, "scan inputs");
    char *taken = d5_calloc((size_t)(p.N + p.M) + 1, NAME_LEN, "scan inputs");
    d5__lval *st = d5_calloc((size_t)(p.N + 1) + (size_t)batch * (size_t)(p.N + p.K), sizeof *st,
                             "scan states");
    if (!xs || !taken || !st) s = D5_ERR_NOMEM;
    d5__lval *per = st + p.N + 1;
    d5__scope body_sc;
    char prefix[NAME_LEN];
    snprintf(prefix, sizeof prefix, "%s/", r->base);
    if (s == D5_OK)
        s = d5__lower_body_scope(r->L, p.body, r->sc, prefix, &body_sc);
    else
        memset(&body_sc, 0, sizeof body_sc);
    if (s == D5_OK && !batched) {
        for (int32_t j = 0; s == D5_OK && j < p.N; j++) s = d5__lval_copy(r->in[j], &st[j]);
        for (int32_t j = 0; j < p.M; j++) xs[j] = r->in[p.N + j]->names[0];
        if (s == D5_OK) s = scan_once(r, &p, &body_sc, r->base, st, xs, per);
        for (int32_t k = 0; s == D5_OK && k < p.N + p.K && k < r->n->nout; k++) {
            r->out[k] = per[k];
            memset(&per[k], 0, sizeof per[k]);
        }
    }
    /* Opset 8: each batch element scanned alone, the results stacked. */
    char base[NAME_LEN];
    for (int64_t b = 0; s == D5_OK && batched && b < batch; b++) {
        for (int32_t j = 0; s == D5_OK && j < p.N + p.M; j++) {
            char *name = taken + (size_t)j * NAME_LEN;
            s = take(r, r->in[1 + j]->names[0], b, 0, name);
            if (s == D5_OK && j < p.N) s = d5__lval_tensor(&st[j], name);
            if (j >= p.N) xs[j - p.N] = name;
        }
        snprintf(base, sizeof base, "%s/batch%lld", r->base, (long long)b);
        if (s == D5_OK) s = scan_once(r, &p, &body_sc, base, st, xs, &per[b * (p.N + p.K)]);
        for (int32_t j = 0; j < p.N; j++) d5__lval_clear(&st[j]);
    }
    for (int32_t k = 0; s == D5_OK && batched && k < p.N + p.K && k < r->n->nout; k++) {
        char **names = d5_calloc((size_t)batch + 1, sizeof *names, "scan outputs");
        if (!names) s = D5_ERR_NOMEM;
        for (int64_t b = 0; s == D5_OK && b < batch; b++)
            names[b] = per[b * (p.N + p.K) + k].names[0];
        if (s == D5_OK) s = stack(r, names, (int32_t)batch, 0, 0, NULL, &r->out[k]);
        d5_free(names);
    }
    d5__scope_free(&body_sc);
    d5_free(xs);
    d5_free(taken);
    for (int64_t j = 0; st && j < (p.N + 1) + batch * (p.N + p.K); j++) d5__lval_clear(&st[j]);
    d5_free(st);
    return s;
}

/* ---- Sequences and optionals ---------------------------------------------------------------- */

static d5_status position(const rule_args *r, int32_t k, int64_t def, int64_t lo, int64_t hi,
                          int64_t n, int64_t *pos)
{
    *pos = def;
    if (k < r->n->nin && r->in[k]) {
        if (r->in[k]->type != D5_TYPE_TENSOR)
            return d5_error(D5_ERR_INVALID, "%s: the position is not a tensor", r->label);
        d5_status s = d5__lower_const_int(r->L, r->in[k]->names[0], r->label, "position", pos);
        if (s != D5_OK) return s;
    }
    if (*pos < lo || *pos > hi)
        return d5_error(D5_ERR_RANGE,
                        "%s: position %lld is outside [%lld, %lld] for a sequence "
                        "of %lld",
                        r->label, (long long)*pos, (long long)lo, (long long)hi, (long long)n);
    if (*pos < 0) *pos += n;
    return D5_OK;
}

static d5_status lower_sequence_map(const rule_args *r)
{
    const d5_network *body;
    const d5__lval *seq;
    d5_status s = need_graph(r, "body", &body);
    if (s == D5_OK) s = need(r, 0, D5_TYPE_SEQUENCE, &seq);
    if (s != D5_OK) return s;
    const d5__node *n = r->n;
    for (int32_t j = 1; j < n->nin; j++)
        if (r->in[j] && r->in[j]->type == D5_TYPE_SEQUENCE && r->in[j]->n != seq->n)
            return d5_error(D5_ERR_SHAPE, "%s: sequences of %d and %d elements", r->label,
                            (int)seq->n, (int)r->in[j]->n);
    d5__lval *args = d5_calloc((size_t)n->nin + (size_t)n->nout + 1, sizeof *args, "map");
    if (!args) return D5_ERR_NOMEM;
    d5__lval *res = args + n->nin;
    for (int32_t k = 0; k < n->nout; k++) {
        const d5__value *d = declared_output(body, k);
        r->out[k].type = D5_TYPE_SEQUENCE;
        r->out[k].present = 1;
        r->out[k].dtype = d ? d->desc.dtype : D5_DTYPE_INVALID;
    }
    char prefix[NAME_LEN];
    d5__scope body_sc;
    snprintf(prefix, sizeof prefix, "%s/", r->base);
    s = d5__lower_body_scope(r->L, body, r->sc, prefix, &body_sc);
    for (int32_t i = 0; s == D5_OK && i < seq->n; i++) {
        s = d5__lower_budget(r->L, r->label);
        for (int32_t j = 0; s == D5_OK && j < n->nin; j++) {
            const d5__lval *v = r->in[j];
            if (!v)
                s = d5_error(D5_ERR_INVALID, "%s: input %d is missing", r->label, (int)j);
            else if (v->type == D5_TYPE_SEQUENCE)
                s = d5__lval_tensor(&args[j], v->names[i]);
            else
                s = d5__lval_copy(v, &args[j]);
        }
        snprintf(prefix, sizeof prefix, "%s/%d/", r->base, (int)i);
        if (s == D5_OK)
            s = d5__lower_graph(r->L, body, &body_sc, prefix, args, n->nin, res, n->nout, r->label);
        for (int32_t k = 0; s == D5_OK && k < n->nout; k++) {
            if (res[k].type != D5_TYPE_TENSOR)
                s = d5_error(D5_ERR_UNSUPPORTED, "%s: the body's output %d is not a tensor",
                             r->label, (int)k);
            else
                s = d5__lval_push(&r->out[k], res[k].names[0]);
            if (s == D5_OK) r->out[k].dtype = dtype_of(r, res[k].names[0]);
        }
        for (int32_t j = 0; j < n->nin + n->nout; j++) d5__lval_clear(&args[j]);
    }
    d5__scope_free(&body_sc);
    d5_free(args);
    return s;
}

static d5_status split_to_sequence(const rule_args *r)
{
    const d5__lval *x;
    const d5_tensor_desc *d;
    int64_t axis = 0, keep = 1;
    d5_status s = need(r, 0, D5_TYPE_TENSOR, &x);
    if (s == D5_OK) s = need_desc(r, x->names[0], &d);
    if (s == D5_OK) s = d5_attrs_int(&r->n->attrs_view, "axis", 0, &axis);
    if (s == D5_OK) s = d5_attrs_int(&r->n->attrs_view, "keepdims", 1, &keep);
    if (s != D5_OK) return s;
    if (axis < 0) axis += d->ndim;
    if (axis < 0 || axis >= d->ndim)
        return d5_error(D5_ERR_INVALID, "%s: axis outside the input's %d dimensions", r->label,
                        (int)d->ndim);
    int64_t dim = d->shape[axis];
    d5__lval *out = &r->out[0];
    out->type = D5_TYPE_SEQUENCE;
    out->present = 1;
    out->dtype = d->dtype;
    char name[NAME_LEN];
    const d5__lval *split = r->n->nin > 1 ? r->in[1] : NULL;
    if (!split) {
        for (int64_t i = 0; s == D5_OK && i < dim; i++) {
            if ((s = d5__lower_budget(r->L, r->label)) != D5_OK) break;
            s = keep ? slice(r, x->names[0], i, i + 1, axis, name)
                     : take(r, x->names[0], i, axis, name);
            if (s == D5_OK) s = d5__lval_push(out, name);
        }
        return s;
    }
    const d5__value *sv =
        split->type == D5_TYPE_TENSOR ? d5__lower_value(r->L, split->names[0]) : NULL;
    if (!sv || sv->kind != D5_VALUE_INITIALIZER || sv->desc.ndim > 1 ||
        d5_dtype_is_float((d5_dtype)sv->desc.dtype))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: its split '%s' must be an integer scalar or vector known at create",
                        r->label, r->n->inputs[1]);
    int64_t count = d5_tensor_desc_numel(&sv->desc);
    int64_t *sizes = d5_calloc((size_t)count + 1, sizeof *sizes, "split");
    if (!sizes) return D5_ERR_NOMEM;
    s = d5_convert(sv->init.data, (d5_dtype)sv->desc.dtype, sizes, D5_I64, (size_t)count);
    int64_t chunk = sv->desc.ndim == 0 ? sizes[0] : 0, start = 0;
    if (s == D5_OK && sv->desc.ndim == 0 && chunk < 1)
        s = d5_error(D5_ERR_INVALID, "%s: split %lld", r->label, (long long)chunk);
    for (int64_t i = 0; s == D5_OK && (chunk ? start < dim : i < count); i++) {
        if ((s = d5__lower_budget(r->L, r->label)) != D5_OK) break;
        int64_t len = chunk ? (dim - start < chunk ? dim - start : chunk) : sizes[i];
        if (len < 0 || start + len > dim) {
            s = d5_error(D5_ERR_INVALID, "%s: the split sizes exceed the axis's %lld", r->label,
                         (long long)dim);
            break;
        }
        s = slice(r, x->names[0], start, start + len, axis, name);
        if (s == D5_OK) s = d5__lval_push(out, name);
        start += len;
    }
    if (s == D5_OK && start != dim)
        s = d5_error(D5_ERR_INVALID, "%s: the split sizes add up to %lld, the axis has %lld",
                     r->label, (long long)start, (long long)dim);
    d5_free(sizes);
    return s;
}

static d5_status concat_from_sequence(const rule_args *r)
{
    const d5__lval *seq;
    int64_t axis = 0, new_axis = 0;
    d5_status s = need(r, 0, D5_TYPE_SEQUENCE, &seq);
    if (s == D5_OK && !d5_attrs_find(&r->n->attrs_view, "axis"))
        s = d5_error(D5_ERR_INVALID, "%s: needs the attribute 'axis'", r->label);
    if (s == D5_OK) s = d5_attrs_int(&r->n->attrs_view, "axis", 0, &axis);
    if (s == D5_OK) s = d5_attrs_int(&r->n->attrs_view, "new_axis", 0, &new_axis);
    if (s == D5_OK && seq->n == 0)
        s = d5_error(D5_ERR_INVALID, "%s: the sequence '%s' is empty", r->label, r->n->inputs[0]);
    if (s != D5_OK) return s;
    if (new_axis) return stack(r, seq->names, seq->n, axis, 0, NULL, &r->out[0]);
    char name[NAME_LEN];
    d5_attr a = d5__lower_int_attr("axis", axis);
    s = emit1(r, "Concat", (const char *const *)seq->names, seq->n, &a, 1, "concat", name);
    return s == D5_OK ? d5__lval_tensor(&r->out[0], name) : s;
}

static d5_status lower_sequence(const rule_args *r)
{
    const char *op = r->n->op_type;
    const d5__lval *seq = NULL, *t = NULL;
    d5__lval *out = &r->out[0];
    d5_status s = D5_OK;
    int64_t pos;
    if (strcmp(op, "SequenceConstruct") == 0 || strcmp(op, "SequenceEmpty") == 0) {
        out->type = D5_TYPE_SEQUENCE;
        out->present = 1;
        /* SequenceEmpty's dtype is an ONNX type code; an empty sequence's
         * element type is kept only for what reads it, which no rule does. */
        for (int32_t k = 0; s == D5_OK && op[8] == 'C' && k < r->n->nin; k++) {
            s = need(r, k, D5_TYPE_TENSOR, &t);
            if (s == D5_OK && k == 0) out->dtype = dtype_of(r, t->names[0]);
            if (s == D5_OK && dtype_of(r, t->names[0]) != out->dtype)
                s = d5_error(D5_ERR_INVALID, "%s: tensors of two types in one sequence", r->label);
            if (s == D5_OK) s = d5__lval_push(out, t->names[0]);
        }
        return s;
    }
    if (strcmp(op, "SplitToSequence") == 0) return split_to_sequence(r);
    if (strcmp(op, "ConcatFromSequence") == 0) return concat_from_sequence(r);
    s = need(r, 0, D5_TYPE_SEQUENCE, &seq);
    if (s != D5_OK) return s;
    int64_t n = seq->n;
    if (strcmp(op, "SequenceLength") == 0) {
        char name[NAME_LEN];
        s = const_i64(r, "length", &n, 1, 1, name);
        return s == D5_OK ? d5__lval_tensor(out, name) : s;
    }
    if (strcmp(op, "SequenceAt") == 0) {
        if (r->n->nin < 2 || !r->in[1])
            return d5_error(D5_ERR_INVALID, "%s: needs a position", r->label);
        s = position(r, 1, 0, -n, n - 1, n, &pos);
        return s == D5_OK ? d5__lval_tensor(out, seq->names[pos]) : s;
    }
    s = d5__lval_copy(seq, out);
    if (s == D5_OK && strcmp(op, "SequenceErase") == 0) {
        s = position(r, 1, -1, -n, n - 1, n, &pos);
        if (s == D5_OK) {
            d5_free(out->names[pos]);
            memmove(&out->names[pos], &out->names[pos + 1],
                    (size_t)(out->n - pos - 1) * sizeof *out->names);
            out->n--;
        }
    } else if (s == D5_OK) { /* SequenceInsert */
        s = need(r, 1, D5_TYPE_TENSOR, &t);
        if (s == D5_OK) s = position(r, 2, n, -n, n, n, &pos);
        if (s == D5_OK && n && dtype_of(r, t->names[0]) != out->dtype && out->dtype)
            s = d5_error(D5_ERR_INVALID, "%s: a %s tensor into a sequence of %s", r->label,
                         d5_dtype_name((d5_dtype)dtype_of(r, t->names[0])),
                         d5_dtype_name((d5_dtype)out->dtype));
        if (s == D5_OK) s = d5__lval_push(out, t->names[0]);
        if (s == D5_OK) {
            char *last = out->names[out->n - 1];
            memmove(&out->names[pos + 1], &out->names[pos],
                    (size_t)(out->n - 1 - pos) * sizeof *out->names);
            out->names[pos] = last;
            out->dtype = dtype_of(r, last);
        }
    }
    return s;
}

static d5_status lower_optional(const rule_args *r)
{
    const char *op = r->n->op_type;
    const d5__lval *x = r->n->nin > 0 ? r->in[0] : NULL;
    d5__lval *out = &r->out[0];
    if (strcmp(op, "Optional") == 0) {
        if (x) {
            d5_status s = d5__lval_copy(x, out);
            out->type = x->type == D5_TYPE_SEQUENCE ? D5_TYPE_OPTIONAL_SEQUENCE : D5_TYPE_OPTIONAL;
            out->present = 1;
            return s;
        }
        const char *type = "";
        d5_status s = d5_attrs_string(&r->n->attrs_view, "type", "", &type);
        out->type =
            strncmp(type, "sequence", 8) == 0 ? D5_TYPE_OPTIONAL_SEQUENCE : D5_TYPE_OPTIONAL;
        return s;
    }
    if (strcmp(op, "OptionalHasElement") == 0) {
        char name[NAME_LEN];
        int has = x && (x->type == D5_TYPE_TENSOR || x->type == D5_TYPE_SEQUENCE || x->present);
        d5__lower_fresh(r->L, r->base, "has_element", name, sizeof name);
        d5_status s = d5__lower_bool(r->L, name, has);
        return s == D5_OK ? d5__lval_tensor(out, name) : s;
    }
    /* OptionalGetElement; from opset 18 a tensor or sequence passes as it is. */
    if (!x) return d5_error(D5_ERR_INVALID, "%s: needs an input", r->label);
    if ((x->type == D5_TYPE_OPTIONAL || x->type == D5_TYPE_OPTIONAL_SEQUENCE) && !x->present)
        return d5_error(D5_ERR_INVALID, "%s: the optional '%s' holds nothing", r->label,
                        r->n->inputs[0]);
    d5_status s = d5__lval_copy(x, out);
    if (x->type == D5_TYPE_OPTIONAL) out->type = D5_TYPE_TENSOR;
    if (x->type == D5_TYPE_OPTIONAL_SEQUENCE) out->type = D5_TYPE_SEQUENCE;
    return s;
}

d5_status d5__lower_control(d5__lowerer *L, const d5__node *n, const d5__scope *sc,
                            const char *base, const char *label, const d5__lval *const *in,
                            d5__lval *out)
{
    rule_args r = {L, n, sc, base, label, in, out};
    const char *op = n->op_type;
    if (strcmp(n->domain, "ai.onnx.preview") == 0 && strcmp(op, "FlexAttention") == 0)
        return d5__lower_flex_attention(L, n, sc, base, label, in, out);
    if (n->domain[0])
        return d5_error(D5_ERR_UNSUPPORTED, "%s: a node of domain '%s' with a graph attribute",
                        label, n->domain);
    if (strcmp(op, "If") == 0) return lower_if(&r);
    if (strcmp(op, "Loop") == 0) return lower_loop(&r);
    if (strcmp(op, "Scan") == 0) return lower_scan(&r);
    if (strcmp(op, "SequenceMap") == 0) return lower_sequence_map(&r);
    if (strncmp(op, "Sequence", 8) == 0 || strcmp(op, "SplitToSequence") == 0 ||
        strcmp(op, "ConcatFromSequence") == 0)
        return lower_sequence(&r);
    if (strncmp(op, "Optional", 8) == 0) return lower_optional(&r);
    if (strcmp(op, "Identity") == 0 && n->nin == 1 && in[0]) return d5__lval_copy(in[0], &out[0]);
    return d5_error(D5_ERR_UNSUPPORTED, "%s: d5 does not run %s with a graph attribute", label, op);
}
