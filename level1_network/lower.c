/* Control flow, sequences and optionals resolved at create. The executor
 * compiles shapes statically, so what decides the flow is evaluated here,
 * once: the graph is walked in order with the value of every name in a scope
 * (a tensor, a sequence: a list of tensors, an optional), constants are
 * evaluated as soon as their inputs are (through the ref operators, as the
 * executor's folding), and each control node is replaced by what it does
 * (lower_ops.c): an If by its branch, a Loop or Scan by its iterations, a
 * sequence operator by tensor nodes or by none. The result is a network of
 * tensors only, which the executor compiles as any other. */
#include "lower_internal.h"

#include <stdio.h>
#include <string.h>

/* Outputs of at most this many bytes are evaluated while lowering; larger
 * ones are left to the executor's folding and its budget. */
#define LOWER_FOLD_BYTES ((size_t)64 << 10)

/* ---- Values and scopes ---------------------------------------------------------------------- */

void d5__lval_clear(d5__lval *v)
{
    for (int32_t i = 0; v->names && i < v->n; i++) d5_free(v->names[i]);
    d5_free(v->names);
    memset(v, 0, sizeof *v);
}

d5_status d5__lval_push(d5__lval *v, const char *name)
{
    char **names = d5_realloc(v->names, (size_t)v->n * sizeof *names,
                              ((size_t)v->n + 1) * sizeof *names, "sequence");
    if (!names) return D5_ERR_NOMEM;
    v->names = names;
    if (!(names[v->n] = d5_strdup(name, "value name"))) return D5_ERR_NOMEM;
    v->n++;
    return D5_OK;
}

d5_status d5__lval_copy(const d5__lval *src, d5__lval *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->present = src->present;
    dst->dtype = src->dtype;
    for (int32_t i = 0; i < src->n; i++) {
        d5_status s = d5__lval_push(dst, src->names[i]);
        if (s != D5_OK) {
            d5__lval_clear(dst);
            return s;
        }
    }
    return D5_OK;
}

d5_status d5__lval_tensor(d5__lval *v, const char *name)
{
    memset(v, 0, sizeof *v);
    v->type = D5_TYPE_TENSOR;
    v->present = 1;
    return d5__lval_push(v, name);
}

d5_status d5__scope_put(d5__scope *sc, const char *key, d5__lval *v)
{
    if (sc->n == sc->cap) {
        int32_t cap = sc->cap ? sc->cap * 2 : 16;
        char **keys = d5_realloc(sc->keys, (size_t)sc->cap * sizeof *keys,
                                 (size_t)cap * sizeof *keys, "scope");
        if (keys) sc->keys = keys;
        d5__lval *vals = keys ? d5_realloc(sc->vals, (size_t)sc->cap * sizeof *vals,
                                           (size_t)cap * sizeof *vals, "scope")
                              : NULL;
        if (vals) sc->vals = vals;
        if (!keys || !vals) {
            d5__lval_clear(v);
            return D5_ERR_NOMEM;
        }
        sc->cap = cap;
    }
    if (!(sc->keys[sc->n] = d5_strdup(key, "scope name"))) {
        d5__lval_clear(v);
        return D5_ERR_NOMEM;
    }
    sc->vals[sc->n++] = *v;
    memset(v, 0, sizeof *v);
    return D5_OK;
}

const d5__lval *d5__scope_get(const d5__scope *sc, const char *key)
{
    for (; sc; sc = sc->parent)
        for (int32_t i = sc->n - 1; i >= 0; i--)
            if (strcmp(sc->keys[i], key) == 0) return &sc->vals[i];
    return NULL;
}

void d5__scope_free(d5__scope *sc)
{
    for (int32_t i = 0; i < sc->n; i++) {
        d5_free(sc->keys[i]);
        d5__lval_clear(&sc->vals[i]);
    }
    d5_free(sc->keys);
    d5_free(sc->vals);
    memset(sc, 0, sizeof *sc);
}

/* ---- The network built ---------------------------------------------------------------------- */

const d5__value *d5__lower_value(const d5__lowerer *L, const char *name)
{
    int32_t i = d5__network_value(L->out, name);
    return i >= 0 ? &L->out->values[i] : NULL;
}

d5_status d5__lower_const_int(const d5__lowerer *L, const char *name, const char *label,
                              const char *role, int64_t *x)
{
    const d5__value *v = d5__lower_value(L, name);
    if (!v || v->kind != D5_VALUE_INITIALIZER)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: its %s '%s' is computed at run time; d5 resolves control flow and "
                        "sequences at create, where it must be a constant (an initializer, a "
                        "bound input, or computed from those and from shapes)",
                        label, role, name);
    if (d5_tensor_desc_numel(&v->desc) != 1 || d5_dtype_is_float((d5_dtype)v->desc.dtype))
        return d5_error(D5_ERR_INVALID,
                        "%s: its %s '%s' is %s with %lld elements, expected one "
                        "integer or bool",
                        label, role, name, d5_dtype_name((d5_dtype)v->desc.dtype),
                        (long long)d5_tensor_desc_numel(&v->desc));
    return d5_convert(v->init.data, (d5_dtype)v->desc.dtype, x, D5_I64, 1);
}

d5_status d5__lower_budget(const d5__lowerer *L, const char *label)
{
    if ((int64_t)L->out->nnodes + L->out->nvalues <= D5__LOWER_MAX_NODES) return D5_OK;
    return d5_error(D5_ERR_UNSUPPORTED,
                    "%s: the network with its loops unrolled would have more than %lld nodes and "
                    "values",
                    label, (long long)D5__LOWER_MAX_NODES);
}

void d5__lower_fresh(d5__lowerer *L, const char *base, const char *what, char *buf, size_t size)
{
    do snprintf(buf, size, "%s/%s_%lld", base, what, (long long)L->counter++);
    while (d5__network_value(L->out, buf) >= 0 || d5__network_node(L->out, buf) >= 0);
}

static d5_status add_const(d5__lowerer *L, const char *name, const d5_tensor_desc *desc,
                           const void *data)
{
    d5_tensor t;
    memset(&t, 0, sizeof t);
    t.desc = *desc;
    t.data = (void *)data;
    return d5_network_add_initializer(L->out, name, &t);
}

d5_status d5__lower_i64(d5__lowerer *L, const char *name, const int64_t *v, int32_t n, int scalar)
{
    d5_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = D5_I64;
    d.ndim = scalar ? 0 : 1;
    d.shape[0] = n;
    return add_const(L, name, &d, v);
}

d5_status d5__lower_bool(d5__lowerer *L, const char *name, int b)
{
    d5_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = D5_BOOL;
    uint8_t x = b != 0;
    return add_const(L, name, &d, &x);
}

/* The one byte behind a non-constant input of Shape, which reads descriptors only. */
static uint8_t shape_stand_in;

/* Evaluates op (created on in[]) into initializers named out[]; *done is 0
 * when the outputs are too large to be evaluated here. */
static d5_status fold(d5__lowerer *L, d5_op *op, const d5_tensor *in, int32_t nin,
                      const char *const *out, int32_t nout, int *done)
{
    size_t total = 0;
    *done = 0;
    for (int32_t k = 0; k < nout; k++) {
        size_t bytes = 0;
        d5_status s = d5_tensor_desc_bytes(d5_op_output_desc(op, k), &bytes);
        if (s != D5_OK || bytes > LOWER_FOLD_BYTES) return D5_OK;
        total += bytes;
    }
    if (total > LOWER_FOLD_BYTES) return D5_OK;
    d5_tensor *t = d5_calloc((size_t)nout + (size_t)nin, sizeof *t, "folded outputs");
    if (!t) return D5_ERR_NOMEM;
    d5_tensor *filled = t + nout;
    d5_status s = D5_OK;
    for (int32_t k = 0; s == D5_OK && k < nout; k++)
        s = d5_tensor_alloc(d5_op_output_desc(op, k), &t[k]);
    for (int32_t k = 0; k < nin; k++) {
        filled[k] = in[k];
        if (in[k].desc.dtype != D5_DTYPE_INVALID && !in[k].data) filled[k].data = &shape_stand_in;
    }
    if (s == D5_OK) s = d5_op_forward(op, filled, t);
    for (int32_t k = 0; s == D5_OK && k < nout; k++) {
        if (t[k].desc.dtype == D5_STRING) { /* the operator's strings, copied out */
            d5_tensor copy;
            if ((s = d5_tensor_clone(&t[k], &copy)) != D5_OK) break;
            d5_tensor_free(&t[k]);
            t[k] = copy;
        }
        s = d5_network_add_initializer_take(L->out, out[k], &t[k]);
    }
    for (int32_t k = 0; k < nout; k++) d5_tensor_free(&t[k]);
    d5_free(t);
    if (s == D5_OK) *done = 1;
    return s;
}

d5_status d5__lower_emit(d5__lowerer *L, const char *name, const char *op_type,
                         const char *const *in, int32_t nin, const char *const *out, int32_t nout,
                         const d5_attr *attrs, int32_t nattrs)
{
    char label[300];
    snprintf(label, sizeof label, "node '%s'", name);
    d5_status budget = d5__lower_budget(L, label);
    if (budget != D5_OK) return budget;
    d5_tensor *tin = d5_calloc((size_t)nin + 1, sizeof *tin, "node inputs");
    d5_attr *a = d5_calloc((size_t)nattrs + 1, sizeof *a, "node attributes");
    d5_status s = tin && a ? D5_OK : D5_ERR_NOMEM;
    int known = 1, all_const = 1;
    for (int32_t k = 0; s == D5_OK && k < nin; k++) {
        if (!in[k][0]) continue;
        const d5__value *v = d5__lower_value(L, in[k]);
        if (!v || !v->known) {
            known = 0;
            break;
        }
        tin[k].desc = v->desc;
        /* Parameters that backprop trains, or that may change between runs,
         * are read at run time, as the executor's folding leaves them. */
        int param = L->variable && d5_dtype_is_float((d5_dtype)v->desc.dtype);
        if (v->kind == D5_VALUE_INITIALIZER && !param)
            tin[k].data = v->init.data;
        else
            all_const = 0;
    }
    /* Shapes (and constants) through the ref operator: what decides the flow
     * later (a trip count, a sequence's length) may depend on them. */
    d5_op *op = NULL;
    const d5_op_desc *desc = NULL;
    if (s == D5_OK && known && d5_op_find(op_type, "ref", &desc) == D5_OK) {
        if (nattrs) memcpy(a, attrs, (size_t)nattrs * sizeof *a);
        a[nattrs].name = D5_ATTR_OPSET;
        a[nattrs].type = D5_ATTR_INT;
        a[nattrs].i = d5_network_opset(L->top, "");
        d5_attrs view = {a, nattrs + 1};
        if (d5_op_create(desc, tin, nin, &view, nout, &op) != D5_OK) op = NULL;
    }
    d5__node probe;
    memset(&probe, 0, sizeof probe);
    probe.op_type = (char *)op_type;
    probe.domain = (char *)"";
    int done = 0;
    if (s == D5_OK && op && d5__fold_candidate(&probe, all_const))
        s = fold(L, op, tin, nin, out, nout, &done);
    if (s == D5_OK && !done) {
        d5_attrs view = {attrs, nattrs};
        int32_t index;
        s = d5_network_add_node(L->out, name, op_type, "", in, nin, out, nout, &view, &index);
        for (int32_t k = 0; s == D5_OK && op && k < nout; k++) {
            d5__value *v = &L->out->values[d5__network_value(L->out, out[k])];
            v->desc = *d5_op_output_desc(op, k);
            v->known = 1;
        }
    }
    d5_op_free(op);
    d5_free(tin);
    d5_free(a);
    return s;
}

/* ---- Walking graphs ------------------------------------------------------------------------- */

static int is_tensor_op(const d5__node *n, const d5__scope *sc)
{
    if (n->ngraphs || d5__control_op(n)) return 0;
    /* Identity passes sequences and optionals on too. */
    if (!n->domain[0] && strcmp(n->op_type, "Identity") == 0 && n->nin == 1) {
        const d5__lval *v = d5__scope_get(sc, n->inputs[0]);
        if (v && v->type != D5_TYPE_TENSOR) return 0;
    }
    return 1;
}

static d5_status join(char *buf, size_t size, const char *a, const char *b)
{
    int len = snprintf(buf, size, "%s%s", a, b);
    if (len < 0 || (size_t)len >= size)
        return d5_error(D5_ERR_UNSUPPORTED, "the name '%s%s' is too long", a, b);
    return D5_OK;
}

#define NAME_MAX_LEN 1024

static d5_status lower_node(d5__lowerer *L, const d5__node *n, d5__scope *sc, const char *prefix)
{
    char label[NAME_MAX_LEN + 64], base[NAME_MAX_LEN];
    snprintf(label, sizeof label, "node '%s%s' (%s)", prefix, n->name, n->op_type);
    d5_status s = join(base, sizeof base, prefix, n->name);
    if (s != D5_OK) return s;
    const d5__lval **in = d5_calloc((size_t)n->nin + 1, sizeof *in, "node inputs");
    d5__lval *out = d5_calloc((size_t)n->nout, sizeof *out, "node outputs");
    char **names = d5_calloc((size_t)n->nin + (size_t)n->nout + 1, sizeof *names, "names");
    if (!in || !out || !names) s = D5_ERR_NOMEM;
    for (int32_t k = 0; s == D5_OK && k < n->nin; k++) {
        if (!n->inputs[k][0]) continue;
        if (!(in[k] = d5__scope_get(sc, n->inputs[k])))
            s = d5_error(D5_ERR_INVALID,
                         "%s: input '%s' is no value of its graph or of a graph around it", label,
                         n->inputs[k]);
    }
    if (s == D5_OK && !is_tensor_op(n, sc)) {
        s = d5__lower_control(L, n, sc, base, label, in, out);
    } else {
        for (int32_t k = 0; s == D5_OK && k < n->nin; k++) {
            if (in[k] && in[k]->type != D5_TYPE_TENSOR)
                s = d5_error(D5_ERR_UNSUPPORTED,
                             "%s: input '%s' is a%s %s; the operator takes "
                             "tensors",
                             label, n->inputs[k], in[k]->type == D5_TYPE_SEQUENCE ? "" : "n",
                             d5_type_name(in[k]->type));
            names[k] = in[k] ? in[k]->names[0] : (char *)"";
        }
        char buf[NAME_MAX_LEN];
        for (int32_t k = 0; s == D5_OK && k < n->nout; k++) {
            s = join(buf, sizeof buf, prefix, n->outputs[k]);
            if (s == D5_OK) s = d5__lval_tensor(&out[k], buf);
            if (s == D5_OK) names[n->nin + k] = out[k].names[0];
        }
        if (s == D5_OK)
            s = d5__lower_emit(L, base, n->op_type, (const char *const *)names, n->nin,
                               (const char *const *)names + n->nin, n->nout, n->attrs, n->nattrs);
    }
    for (int32_t k = 0; s == D5_OK && k < n->nout; k++)
        s = d5__scope_put(sc, n->outputs[k], &out[k]);
    for (int32_t k = 0; out && k < n->nout; k++) d5__lval_clear(&out[k]);
    d5_free(in);
    d5_free(out);
    d5_free(names);
    return s;
}

/* Initializers of a graph instance, named "<prefix><name>". */
static d5_status graph_initializers(d5__lowerer *L, const d5_network *g, d5__scope *sc,
                                    const char *prefix)
{
    char buf[NAME_MAX_LEN];
    for (int32_t i = 0; i < g->nvalues; i++) {
        const d5__value *v = &g->values[i];
        if (v->kind != D5_VALUE_INITIALIZER) continue;
        d5__lval t;
        d5_status s = join(buf, sizeof buf, prefix, v->name);
        if (s == D5_OK) s = d5_network_add_initializer(L->out, buf, &v->init);
        if (s == D5_OK) s = d5__lval_tensor(&t, buf);
        if (s == D5_OK) s = d5__scope_put(sc, v->name, &t);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5__lower_body_scope(d5__lowerer *L, const d5_network *g, const d5__scope *parent,
                               const char *prefix, d5__scope *out)
{
    memset(out, 0, sizeof *out);
    out->parent = parent;
    out->body = g;
    return graph_initializers(L, g, out, prefix);
}

d5_status d5__lower_graph(d5__lowerer *L, const d5_network *g, const d5__scope *parent,
                          const char *prefix, const d5__lval *args, int32_t nargs, d5__lval *res,
                          int32_t nres, const char *label)
{
    if (nargs != g->ninputs)
        return d5_error(D5_ERR_INVALID, "%s: its graph '%s' takes %d inputs, the node binds %d",
                        label, g->name, (int)g->ninputs, (int)nargs);
    if (nres > g->noutputs)
        return d5_error(D5_ERR_INVALID, "%s: its graph '%s' gives %d outputs, the node needs %d",
                        label, g->name, (int)g->noutputs, (int)nres);
    d5__scope sc;
    memset(&sc, 0, sizeof sc);
    sc.parent = parent;
    d5_status s = D5_OK;
    for (int32_t k = 0; s == D5_OK && k < nargs; k++) {
        d5__lval v;
        s = d5__lval_copy(&args[k], &v);
        if (s == D5_OK) s = d5__scope_put(&sc, g->values[g->inputs[k]].name, &v);
    }
    if (s == D5_OK && !(parent && parent->body == g)) s = graph_initializers(L, g, &sc, prefix);
    /* ONNX keeps a graph's nodes in topological order. */
    for (int32_t i = 0; s == D5_OK && i < g->nnodes; i++)
        s = lower_node(L, &g->nodes[i], &sc, prefix);
    for (int32_t k = 0; s == D5_OK && k < nres; k++) {
        const d5__lval *v = d5__scope_get(&sc, g->outputs[k]);
        if (!v)
            s = d5_error(D5_ERR_INVALID, "%s: output '%s' of its graph '%s' is never computed",
                         label, g->outputs[k], g->name);
        else
            s = d5__lval_copy(v, &res[k]);
        if (s != D5_OK)
            for (int32_t j = 0; j < k; j++) d5__lval_clear(&res[j]);
    }
    d5__scope_free(&sc);
    return s;
}

/* ---- The network's inputs and outputs ------------------------------------------------------- */

static void lowered_value_clear(d5__lowered_value *v)
{
    for (int32_t i = 0; v->names && i < v->count; i++) d5_free(v->names[i]);
    d5_free(v->names);
    d5_free(v->views);
    d5_free(v->name);
}

void d5__lowered_free(d5__lowered *l)
{
    if (!l) return;
    for (int32_t i = 0; i < l->ninputs; i++) lowered_value_clear(&l->inputs[i]);
    for (int32_t i = 0; i < l->noutputs; i++) lowered_value_clear(&l->outputs[i]);
    d5_free(l->inputs);
    d5_free(l->outputs);
    d5_network_free(l->net);
    d5_free(l);
}

/* Fills a record of a sequence or optional graph input or output from v;
 * item k is named "<name>[k]" in the network built ("<name>" for an optional
 * tensor). */
static d5_status record(d5__lowered_value *r, const char *name, const d5__lval *v)
{
    r->name = d5_strdup(name, "value name");
    r->type = v->type;
    r->present = v->present;
    r->dtype = v->dtype;
    r->names = d5_calloc((size_t)v->n + 1, sizeof *r->names, "value items");
    r->views = d5_calloc((size_t)v->n + 1, sizeof *r->views, "value items");
    if (!r->name || !r->names || !r->views) return D5_ERR_NOMEM;
    for (int32_t k = 0; k < v->n; k++) {
        char buf[NAME_MAX_LEN];
        int len = v->type == D5_TYPE_OPTIONAL ? snprintf(buf, sizeof buf, "%s", name)
                                              : snprintf(buf, sizeof buf, "%s[%d]", name, (int)k);
        if (len < 0 || (size_t)len >= sizeof buf)
            return d5_error(D5_ERR_UNSUPPORTED, "the name '%s' is too long", name);
        if (!(r->names[k] = d5_strdup(buf, "value item"))) return D5_ERR_NOMEM;
        r->count++;
    }
    return D5_OK;
}

static const d5_value *given_value(const d5_executor_options *opt, const char *name)
{
    for (int32_t i = 0; opt && i < opt->nvalues; i++)
        if (opt->value_names && opt->value_names[i] && strcmp(opt->value_names[i], name) == 0)
            return &opt->values[i];
    return NULL;
}

static const d5_tensor *given_const(const d5_executor_options *opt, const char *name)
{
    for (int32_t i = 0; opt && i < opt->nconst; i++)
        if (opt->const_names && opt->const_names[i] && strcmp(opt->const_names[i], name) == 0)
            return &opt->const_values[i];
    return NULL;
}

/* A sequence or optional graph input: its items become tensor inputs. */
static d5_status bind_value_input(d5__lowerer *L, d5__lowered *lw, const d5__value *in,
                                  const d5_value *given, d5__lval *v)
{
    int want_optional = in->type == D5_TYPE_OPTIONAL || in->type == D5_TYPE_OPTIONAL_SEQUENCE;
    int is_optional = given->type == D5_TYPE_OPTIONAL || given->type == D5_TYPE_OPTIONAL_SEQUENCE;
    if (want_optional != is_optional ||
        (in->type == D5_TYPE_SEQUENCE && given->type != D5_TYPE_SEQUENCE))
        return d5_error(D5_ERR_INVALID, "graph input '%s' is a%s %s; the value given is a%s %s",
                        in->name, want_optional ? "n" : "", d5_type_name(in->type),
                        is_optional ? "n" : "", d5_type_name(given->type));
    if (given->count < 0 || (given->count && !given->items) ||
        (given->type == D5_TYPE_OPTIONAL && given->present && given->count != 1))
        return d5_error(D5_ERR_INVALID, "graph input '%s': the value given has %d tensors",
                        in->name, (int)given->count);
    memset(v, 0, sizeof *v);
    v->type = given->type;
    v->present = given->type == D5_TYPE_SEQUENCE || given->present;
    v->dtype = given->dtype;
    int32_t n = v->present ? given->count : 0;
    d5__lowered_value *r = &lw->inputs[lw->ninputs++];
    d5__lval shape = {v->type, v->present, v->dtype, n, NULL}; /* record() reads no names */
    d5_status s = record(r, in->name, &shape);
    for (int32_t k = 0; s == D5_OK && k < n; k++) {
        if (given->items[k].desc.dtype != given->dtype)
            s = d5_error(D5_ERR_INVALID,
                         "graph input '%s': tensor %d is %s, the value's elements "
                         "%s",
                         in->name, (int)k, d5_dtype_name((d5_dtype)given->items[k].desc.dtype),
                         d5_dtype_name((d5_dtype)given->dtype));
        if (s == D5_OK) s = d5_network_add_input(L->out, r->names[k], &given->items[k].desc, NULL);
        if (s == D5_OK) s = d5__lval_push(v, r->names[k]);
    }
    return s;
}

static d5_status bind_inputs(d5__lowerer *L, d5__lowered *lw, const d5_executor_options *opt,
                             d5__scope *sc)
{
    const d5_network *net = L->top;
    for (int32_t i = 0; i < net->nvalues; i++) {
        const d5__value *v = &net->values[i];
        if (v->kind != D5_VALUE_INITIALIZER) continue;
        d5__lval t;
        d5_status s = d5_network_add_initializer(L->out, v->name, &v->init);
        if (s == D5_OK) s = d5__lval_tensor(&t, v->name);
        if (s == D5_OK) s = d5__scope_put(sc, v->name, &t);
        if (s != D5_OK) return s;
    }
    lw->inputs = d5_calloc((size_t)net->ninputs + 1, sizeof *lw->inputs, "inputs");
    if (!lw->inputs) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < net->ninputs; i++) {
        const d5__value *in = &net->values[net->inputs[i]];
        d5__lval v;
        memset(&v, 0, sizeof v);
        d5_status s = D5_OK;
        if (in->type != D5_TYPE_TENSOR) {
            const d5_value *given = given_value(opt, in->name);
            if (!given)
                return d5_error(D5_ERR_INVALID,
                                "graph input '%s' is a%s %s: give its value at create "
                                "(d5_executor_options.values)",
                                in->name, in->type == D5_TYPE_SEQUENCE ? "" : "n",
                                d5_type_name(in->type));
            s = bind_value_input(L, lw, in, given, &v);
        } else {
            /* A bound input is an initializer of the network built: what it
             * decides is resolved here. */
            const d5_tensor *c = given_const(opt, in->name);
            s = c ? add_const(L, in->name, &c->desc, c->data)
                  : d5_network_add_input(L->out, in->name, &in->desc,
                                         (const char *const *)in->dim_params);
            if (s == D5_OK) s = d5__lval_tensor(&v, in->name);
        }
        if (s == D5_OK) s = d5__scope_put(sc, in->name, &v);
        d5__lval_clear(&v);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* A graph output: a tensor keeps its name (an Identity gives it where the
 * tensor has another); a sequence's or optional's items are outputs
 * "<name>[k]". */
static d5_status bind_output(d5__lowerer *L, d5__lowered *lw, const char *name, const d5__lval *v)
{
    char node[NAME_MAX_LEN + 16];
    d5_status s = D5_OK;
    const d5__value *decl = &L->top->values[d5__network_value(L->top, name)];
    if (v->type == D5_TYPE_TENSOR && decl->type == D5_TYPE_TENSOR) {
        if (strcmp(v->names[0], name) != 0) {
            const char *in = v->names[0];
            d5__lower_fresh(L, name, "output", node, sizeof node);
            s = d5_network_add_node(L->out, node, "Identity", "", &in, 1, &name, 1, NULL, NULL);
        }
        return s == D5_OK ? d5_network_add_output(L->out, name, NULL) : s;
    }
    d5__lval as = *v;
    if (decl->type != D5_TYPE_TENSOR && v->type == D5_TYPE_TENSOR) as.type = D5_TYPE_OPTIONAL;
    if ((decl->type == D5_TYPE_OPTIONAL || decl->type == D5_TYPE_OPTIONAL_SEQUENCE) &&
        v->type == D5_TYPE_SEQUENCE)
        as.type = D5_TYPE_OPTIONAL_SEQUENCE;
    if (decl->type == D5_TYPE_TENSOR ||
        (decl->type == D5_TYPE_SEQUENCE && as.type != D5_TYPE_SEQUENCE))
        return d5_error(D5_ERR_INVALID, "graph output '%s' is declared a %s but is a %s", name,
                        d5_type_name(decl->type), d5_type_name(v->type));
    d5__lowered_value *r = &lw->outputs[lw->noutputs++];
    s = record(r, name, &as);
    for (int32_t k = 0; s == D5_OK && k < v->n; k++) {
        const char *in = v->names[k], *out = r->names[k];
        d5__lower_fresh(L, out, "output", node, sizeof node);
        s = d5_network_add_node(L->out, node, "Identity", "", &in, 1, &out, 1, NULL, NULL);
        if (s == D5_OK) s = d5_network_add_output(L->out, out, NULL);
    }
    return s;
}

d5_status d5__lower(const d5_network *net, const d5_executor_options *opt, d5__lowered **out)
{
    *out = NULL;
    d5__lowered *lw = d5_calloc(1, sizeof *lw, "lowered network");
    if (!lw) return D5_ERR_NOMEM;
    d5__lowerer L = {net, NULL, 0, opt && (opt->backprop || opt->variable_params)};
    d5__scope sc;
    memset(&sc, 0, sizeof sc);
    int32_t *order = d5_alloc(((size_t)net->nnodes + 1) * sizeof *order, "schedule");
    d5_status s = order ? d5_network_create(net->name, &lw->net) : D5_ERR_NOMEM;
    L.out = lw->net;
    for (int32_t i = 0; s == D5_OK && i < net->nopsets; i++)
        s = d5_network_set_opset(L.out, net->opsets[i].domain, net->opsets[i].version);
    if (s == D5_OK) s = d5_network_check(net, order);
    if (s == D5_OK) s = bind_inputs(&L, lw, opt, &sc);
    for (int32_t i = 0; s == D5_OK && i < net->nnodes; i++)
        s = lower_node(&L, &net->nodes[order[i]], &sc, "");
    if (s == D5_OK) {
        lw->outputs = d5_calloc((size_t)net->noutputs + 1, sizeof *lw->outputs, "outputs");
        if (!lw->outputs) s = D5_ERR_NOMEM;
    }
    for (int32_t i = 0; s == D5_OK && i < net->noutputs; i++) {
        const d5__lval *v = d5__scope_get(&sc, net->outputs[i]);
        s = v ? bind_output(&L, lw, net->outputs[i], v)
              : d5_error(D5_ERR_INVALID, "graph output '%s' is never computed", net->outputs[i]);
    }
    d5__scope_free(&sc);
    d5_free(order);
    if (s != D5_OK) {
        d5__lowered_free(lw);
        return s;
    }
    *out = lw;
    return D5_OK;
}
