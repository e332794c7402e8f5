/* The network graph: values and nodes by name, built and changed through the
 * API of network.h. Names are found through two hash indices that are rebuilt
 * whenever an index shifts (node removal). Reading a network is
 * network_query.c's. */
#include "network_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- Name indices ------------------------------------------------------------------------ */

static uint64_t hash_name(const char *s)
{
    return d5_fnv1a(D5_FNV1A_OFFSET, s, strlen(s));
}

typedef const char *(*name_of_fn)(const d5_network *net, int32_t i);
static const char *value_name(const d5_network *net, int32_t i)
{
    return net->values[i].name;
}
static const char *node_name(const d5_network *net, int32_t i)
{
    return net->nodes[i].name;
}

static int32_t index_find(const d5_network *net, const d5__index *ix, name_of_fn name_of,
                          const char *name)
{
    if (!ix->cap || !name) return -1;
    for (size_t h = hash_name(name) & (ix->cap - 1);; h = (h + 1) & (ix->cap - 1)) {
        int32_t i = ix->slots[h];
        if (i < 0) return -1;
        if (strcmp(name_of(net, i), name) == 0) return i;
    }
}

static void index_put(const d5_network *net, d5__index *ix, name_of_fn name_of, int32_t i)
{
    size_t h = hash_name(name_of(net, i)) & (ix->cap - 1);
    while (ix->slots[h] >= 0) h = (h + 1) & (ix->cap - 1);
    ix->slots[h] = i;
}

/* Rebuilds an index for n entries with room to grow. */
static d5_status index_rebuild(const d5_network *net, d5__index *ix, name_of_fn name_of, int32_t n)
{
    size_t cap = 16;
    while (cap < (size_t)n * 2 + 2) cap *= 2;
    if (cap != ix->cap) {
        int32_t *slots = d5_alloc(cap * sizeof *slots, "network name index");
        if (!slots) return D5_ERR_NOMEM;
        d5_free(ix->slots);
        ix->slots = slots;
        ix->cap = cap;
    }
    memset(ix->slots, 0xff, ix->cap * sizeof *ix->slots);
    for (int32_t i = 0; i < n; i++) index_put(net, ix, name_of, i);
    return D5_OK;
}

/* Makes room in an index for entry n (the next one) and adds it. */
static d5_status index_add(const d5_network *net, d5__index *ix, name_of_fn name_of, int32_t n)
{
    if ((size_t)(n + 1) * 2 > ix->cap) return index_rebuild(net, ix, name_of, n + 1);
    index_put(net, ix, name_of, n);
    return D5_OK;
}

int32_t d5__network_value(const d5_network *net, const char *name)
{
    return index_find(net, &net->value_index, value_name, name);
}

int32_t d5__network_node(const d5_network *net, const char *name)
{
    return index_find(net, &net->node_index, node_name, name);
}

/* Grows an array of `size`-byte items to hold n + 1. */
static d5_status grow(void **arr, int32_t *cap, int32_t n, size_t size, const char *what)
{
    if (n < *cap) return D5_OK;
    int32_t next = *cap ? *cap * 2 : 16;
    void *p = d5_realloc(*arr, (size_t)*cap * size, (size_t)next * size, what);
    if (!p) return D5_ERR_NOMEM;
    memset((char *)p + (size_t)*cap * size, 0, (size_t)(next - *cap) * size);
    *arr = p;
    *cap = next;
    return D5_OK;
}

/* ---- Create and free ----------------------------------------------------------------------- */

d5_status d5_network_create(const char *name, d5_network **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_network_create: out is NULL");
    *out = NULL;
    d5_network *net = d5_calloc(1, sizeof *net, "network");
    if (!net) return D5_ERR_NOMEM;
    net->name = d5_strdup(name && name[0] ? name : "d5", "network name");
    if (!net->name) {
        d5_free(net);
        return D5_ERR_NOMEM;
    }
    *out = net;
    return D5_OK;
}

static void value_clear(d5__value *v)
{
    d5_free(v->name);
    for (int i = 0; i < D5_MAX_DIMS; i++) d5_free(v->dim_params[i]);
    d5_tensor_free(&v->init);
    memset(v, 0, sizeof *v);
}

static void node_clear(d5__node *n)
{
    d5_free(n->name);
    d5_free(n->op_type);
    d5_free(n->domain);
    for (int32_t i = 0; i < n->nin; i++) d5_free(n->inputs ? n->inputs[i] : NULL);
    for (int32_t i = 0; i < n->nout; i++) d5_free(n->outputs ? n->outputs[i] : NULL);
    d5_free(n->inputs);
    d5_free(n->outputs);
    d5__attrs_free(n->attrs, n->nattrs);
    d5__node_graphs_free(n);
    memset(n, 0, sizeof *n);
}

void d5_network_free(d5_network *net)
{
    if (!net) return;
    for (int32_t i = 0; i < net->nnodes; i++) node_clear(&net->nodes[i]);
    for (int32_t i = 0; i < net->nvalues; i++) value_clear(&net->values[i]);
    for (int32_t i = 0; i < net->nopsets; i++) d5_free(net->opsets[i].domain);
    for (int32_t i = 0; i < net->noutputs; i++) d5_free(net->outputs[i]);
    d5_free(net->opsets);
    d5_free(net->nodes);
    d5_free(net->values);
    d5_free(net->inputs);
    d5_free(net->outputs);
    d5_free(net->value_index.slots);
    d5_free(net->node_index.slots);
    d5_free(net->name);
    d5_free(net);
}

const char *d5_network_name(const d5_network *net)
{
    return net ? net->name : NULL;
}

/* ---- Opsets ---------------------------------------------------------------------------------- */

d5_status d5_network_set_opset(d5_network *net, const char *domain, int64_t version)
{
    if (!domain) domain = "";
    if (strcmp(domain, "ai.onnx") == 0) domain = "";
    if (version < 1)
        return d5_error(D5_ERR_INVALID, "opset version %lld of domain '%s' must be positive",
                        (long long)version, domain);
    for (int32_t i = 0; i < net->nopsets; i++)
        if (strcmp(net->opsets[i].domain, domain) == 0) {
            net->opsets[i].version = version;
            return D5_OK;
        }
    d5__opset *o = d5_realloc(net->opsets, (size_t)net->nopsets * sizeof *o,
                              (size_t)(net->nopsets + 1) * sizeof *o, "opsets");
    if (!o) return D5_ERR_NOMEM;
    net->opsets = o;
    if (!(o[net->nopsets].domain = d5_strdup(domain, "opset domain"))) return D5_ERR_NOMEM;
    o[net->nopsets++].version = version;
    return D5_OK;
}

int64_t d5_network_opset(const d5_network *net, const char *domain)
{
    if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
    for (int32_t i = 0; i < net->nopsets; i++)
        if (strcmp(net->opsets[i].domain, domain) == 0) return net->opsets[i].version;
    return domain[0] ? 0 : D5_DEFAULT_OPSET;
}

int32_t d5_network_opset_count(const d5_network *net)
{
    return net ? net->nopsets : 0;
}

void d5_network_opset_at(const d5_network *net, int32_t i, const char **domain, int64_t *version)
{
    if (!net || i < 0 || i >= net->nopsets) {
        *domain = NULL;
        *version = 0;
        return;
    }
    *domain = net->opsets[i].domain;
    *version = net->opsets[i].version;
}

/* ---- Values -----------------------------------------------------------------------------------
 */

static d5_status check_name(const char *what, const char *name)
{
    if (!name || !name[0]) return d5_error(D5_ERR_INVALID, "%s needs a non-empty name", what);
    return D5_OK;
}

/* Appends a value; *index receives it. */
static d5_status value_new(d5_network *net, const char *name, int32_t kind, int32_t *index)
{
    d5_status s = grow((void **)&net->values, &net->value_cap, net->nvalues, sizeof(d5__value),
                       "network values");
    if (s != D5_OK) return s;
    d5__value *v = &net->values[net->nvalues];
    memset(v, 0, sizeof *v);
    if (!(v->name = d5_strdup(name, "value name"))) return D5_ERR_NOMEM;
    v->kind = kind;
    v->producer = -1;
    v->desc.ndim = -1;
    s = index_add(net, &net->value_index, value_name, net->nvalues);
    if (s != D5_OK) {
        value_clear(v);
        return s;
    }
    *index = net->nvalues++;
    return D5_OK;
}

static int desc_known(const d5_tensor_desc *d)
{
    if (d->dtype == D5_DTYPE_INVALID || d->ndim < 0) return 0;
    for (int32_t i = 0; i < d->ndim; i++)
        if (d->shape[i] < 0) return 0;
    return 1;
}

static d5_status check_desc(const char *what, const char *name, const d5_tensor_desc *d)
{
    if (!d) return d5_error(D5_ERR_INVALID, "%s '%s': no descriptor", what, name);
    if (d->ndim < 0 || d->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "%s '%s' has %d dims; d5 supports 0..%d", what, name,
                        (int)d->ndim, D5_MAX_DIMS);
    if (d5_dtype_size((d5_dtype)d->dtype) == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s '%s' has an unknown dtype %d", what, name,
                        (int)d->dtype);
    for (int32_t i = 0; i < d->ndim; i++)
        if (d->shape[i] < -1)
            return d5_error(D5_ERR_INVALID, "%s '%s': dimension %d is %lld", what, name, (int)i,
                            (long long)d->shape[i]);
    return D5_OK;
}

static d5_status set_dim_params(d5__value *v, const char *const *dim_params)
{
    for (int32_t i = 0; i < D5_MAX_DIMS; i++) {
        d5_free(v->dim_params[i]);
        v->dim_params[i] = NULL;
        if (dim_params && i < v->desc.ndim && dim_params[i] && dim_params[i][0])
            if (!(v->dim_params[i] = d5_strdup(dim_params[i], "dim_param"))) return D5_ERR_NOMEM;
    }
    return D5_OK;
}

d5_status d5_network_add_input_typed(d5_network *net, const char *name, int32_t type,
                                     const d5_tensor_desc *desc, const char *const *dim_params)
{
    d5_status s = check_name("a graph input", name);
    if (s != D5_OK) return s;
    if (type < D5_TYPE_TENSOR || type > D5_TYPE_OPTIONAL_SEQUENCE)
        return d5_error(D5_ERR_INVALID, "graph input '%s': type %d is not a d5_type", name,
                        (int)type);
    /* A dtype without a shape (ndim -1) is a type whose rank is unknown. */
    int typed = desc && desc->dtype != D5_DTYPE_INVALID;
    if (typed && desc->ndim < 0 && d5_dtype_size((d5_dtype)desc->dtype) == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "graph input '%s' has an unknown dtype %d", name,
                        (int)desc->dtype);
    if (typed && desc->ndim >= 0 && (s = check_desc("graph input", name, desc)) != D5_OK) return s;
    int32_t i = d5__network_value(net, name);
    if (i >= 0) {
        /* IR < 4: the initializer came first and is also listed as an input. */
        if (net->values[i].kind == D5_VALUE_INITIALIZER && type == D5_TYPE_TENSOR) return D5_OK;
        return d5_error(D5_ERR_INVALID, "graph input '%s': the name is already taken", name);
    }
    s = grow((void **)&net->inputs, &net->input_cap, net->ninputs, sizeof(int32_t), "inputs");
    if (s == D5_OK) s = value_new(net, name, D5_VALUE_INPUT, &i);
    if (s != D5_OK) return s;
    d5__value *v = &net->values[i];
    v->type = type;
    if (typed) {
        v->desc = *desc;
        v->known = desc_known(desc);
    }
    net->inputs[net->ninputs++] = i;
    return set_dim_params(v, typed ? dim_params : NULL);
}

d5_status d5_network_add_input(d5_network *net, const char *name, const d5_tensor_desc *desc,
                               const char *const *dim_params)
{
    d5_status s = check_name("a graph input", name);
    if (s == D5_OK) s = check_desc("graph input", name, desc);
    if (s != D5_OK) return s;
    return d5_network_add_input_typed(net, name, D5_TYPE_TENSOR, desc, dim_params);
}

d5_status d5_network_set_output_type(d5_network *net, const char *name, int32_t type)
{
    int32_t i = net ? d5__network_value(net, name) : -1;
    if (i < 0 || !net->values[i].is_output)
        return d5_error(D5_ERR_NOTFOUND, "no graph output named '%s'", name ? name : "");
    if (type < D5_TYPE_TENSOR || type > D5_TYPE_OPTIONAL_SEQUENCE)
        return d5_error(D5_ERR_INVALID, "graph output '%s': type %d is not a d5_type", name,
                        (int)type);
    net->values[i].type = type;
    return D5_OK;
}

d5_status d5_network_add_output(d5_network *net, const char *name, const d5_tensor_desc *desc)
{
    d5_status s = check_name("a graph output", name);
    if (s == D5_OK && desc) s = check_desc("graph output", name, desc);
    if (s != D5_OK) return s;
    for (int32_t k = 0; k < net->noutputs; k++)
        if (strcmp(net->outputs[k], name) == 0)
            return d5_error(D5_ERR_INVALID, "graph output '%s' is declared twice", name);
    s = grow((void **)&net->outputs, &net->output_cap, net->noutputs, sizeof(char *), "outputs");
    if (s != D5_OK) return s;
    int32_t i = d5__network_value(net, name);
    if (i < 0 && (s = value_new(net, name, D5_VALUE_INTERMEDIATE, &i)) != D5_OK) return s;
    d5__value *v = &net->values[i];
    if (!(net->outputs[net->noutputs] = d5_strdup(name, "output name"))) return D5_ERR_NOMEM;
    net->noutputs++;
    v->is_output = 1;
    if (desc && v->kind == D5_VALUE_INTERMEDIATE && !v->known) {
        v->desc = *desc;
        v->known = desc_known(desc);
    }
    return D5_OK;
}

d5_status d5_network_add_initializer_take(d5_network *net, const char *name, d5_tensor *t)
{
    d5_status s = check_name("an initializer", name);
    if (s == D5_OK && (!t || (!t->data && d5_tensor_desc_numel(&t->desc) > 0)))
        s = d5_error(D5_ERR_INVALID, "initializer '%s' has no data", name ? name : "");
    if (s == D5_OK) s = check_desc("initializer", name, &t->desc);
    if (s == D5_OK && !desc_known(&t->desc))
        s = d5_error(D5_ERR_INVALID, "initializer '%s' has an unknown dimension", name);
    if (s != D5_OK) {
        if (t) d5_tensor_free(t);
        return s;
    }
    int32_t i = d5__network_value(net, name);
    if (i >= 0 && net->values[i].kind != D5_VALUE_INPUT) {
        d5_tensor_free(t);
        return d5_error(D5_ERR_INVALID, "initializer '%s': the name is already taken", name);
    }
    if (i >= 0) {
        /* IR < 4: an input of the same name becomes this initializer. */
        int32_t k = 0;
        while (k < net->ninputs && net->inputs[k] != i) k++;
        memmove(net->inputs + k, net->inputs + k + 1,
                (size_t)(net->ninputs - k - 1) * sizeof *net->inputs);
        net->ninputs--;
        for (int d = 0; d < D5_MAX_DIMS; d++) {
            d5_free(net->values[i].dim_params[d]);
            net->values[i].dim_params[d] = NULL;
        }
    } else if ((s = value_new(net, name, D5_VALUE_INITIALIZER, &i)) != D5_OK) {
        d5_tensor_free(t);
        return s;
    }
    d5__value *v = &net->values[i];
    v->kind = D5_VALUE_INITIALIZER;
    v->desc = t->desc;
    v->known = 1;
    v->init = *t;
    t->data = NULL;
    return D5_OK;
}

d5_status d5_network_add_initializer(d5_network *net, const char *name, const d5_tensor *t)
{
    if (!t) return d5_error(D5_ERR_INVALID, "initializer '%s': no tensor", name ? name : "");
    d5_status s = check_desc("initializer", name ? name : "", &t->desc);
    if (s != D5_OK) return s;
    d5_tensor copy;
    size_t bytes = 0;
    if ((s = d5_tensor_desc_bytes(&t->desc, &bytes)) != D5_OK) return s;
    if (bytes > 0 && !t->data)
        return d5_error(D5_ERR_INVALID, "initializer '%s' has no data", name ? name : "");
    /* A clone: a string tensor's strings are copied too. */
    s = bytes > 0 ? d5_tensor_clone(t, &copy) : d5_tensor_alloc(&t->desc, &copy);
    if (s != D5_OK) return s;
    return d5_network_add_initializer_take(net, name, &copy);
}

d5_status d5_network_set_initializer(d5_network *net, const char *name, const d5_tensor *t)
{
    int32_t i = d5__network_value(net, name);
    if (i < 0 || net->values[i].kind != D5_VALUE_INITIALIZER)
        return d5_error(D5_ERR_NOTFOUND, "no initializer named '%s'", name ? name : "");
    d5__value *v = &net->values[i];
    if (t->desc.dtype != v->desc.dtype || t->desc.ndim != v->desc.ndim ||
        memcmp(t->desc.shape, v->desc.shape, (size_t)v->desc.ndim * sizeof(int64_t)) != 0) {
        char a[96], b[96];
        d5_tensor_desc_format(&t->desc, a, sizeof a);
        d5_tensor_desc_format(&v->desc, b, sizeof b);
        return d5_error(D5_ERR_SHAPE, "initializer '%s' is %s; got %s", name, b, a);
    }
    size_t bytes = 0;
    d5_status s = d5_tensor_desc_bytes(&v->desc, &bytes);
    if (s == D5_OK && bytes && v->desc.dtype == D5_STRING) { /* the strings, not pointers to them */
        d5_tensor copy;
        if ((s = d5_tensor_clone(t, &copy)) == D5_OK) {
            d5_tensor_free(&v->init);
            v->init = copy;
        }
    } else if (s == D5_OK && bytes) {
        memcpy(v->init.data, t->data, bytes);
    }
    return s;
}

/* ---- Nodes ------------------------------------------------------------------------------------
 */

static d5_status copy_names(const char *const *src, int32_t n, char ***dst, const char *what)
{
    *dst = NULL;
    if (n == 0) return D5_OK;
    char **a = d5_calloc((size_t)n, sizeof *a, what);
    if (!a) return D5_ERR_NOMEM;
    *dst = a;
    for (int32_t i = 0; i < n; i++)
        if (!(a[i] = d5_strdup(src[i] ? src[i] : "", what))) return D5_ERR_NOMEM;
    return D5_OK;
}

d5_status d5_network_add_node(d5_network *net, const char *name, const char *op_type,
                              const char *domain, const char *const *inputs, int32_t ninputs,
                              const char *const *outputs, int32_t noutputs, const d5_attrs *attrs,
                              int32_t *index)
{
    char auto_name[160];
    if (!op_type || !op_type[0]) return d5_error(D5_ERR_INVALID, "a node needs an operator type");
    if (ninputs < 0 || noutputs < 1 || (ninputs > 0 && !inputs) || !outputs)
        return d5_error(D5_ERR_INVALID, "node of type %s: %d inputs and %d outputs", op_type,
                        (int)ninputs, (int)noutputs);
    if (!name || !name[0]) {
        /* Unique even when the user names nodes like this too. */
        int32_t k = net->nnodes;
        do snprintf(auto_name, sizeof auto_name, "%s_%d", op_type, (int)k++);
        while (d5__network_node(net, auto_name) >= 0);
        name = auto_name;
    } else if (d5__network_node(net, name) >= 0) {
        return d5_error(D5_ERR_INVALID, "node '%s' (%s): the name is already taken", name, op_type);
    }
    for (int32_t i = 0; i < noutputs; i++) {
        if (!outputs[i] || !outputs[i][0])
            return d5_error(D5_ERR_INVALID, "node '%s' (%s): output %d has no name", name, op_type,
                            (int)i);
        int32_t v = d5__network_value(net, outputs[i]);
        if (v >= 0 &&
            (net->values[v].kind != D5_VALUE_INTERMEDIATE || net->values[v].producer >= 0))
            return d5_error(D5_ERR_INVALID, "node '%s' (%s): output '%s' is already written by %s",
                            name, op_type, outputs[i],
                            net->values[v].producer >= 0 ? net->nodes[net->values[v].producer].name
                                                         : "the graph (an input or initializer)");
        for (int32_t j = 0; j < i; j++)
            if (strcmp(outputs[i], outputs[j]) == 0)
                return d5_error(D5_ERR_INVALID, "node '%s' (%s): output '%s' appears twice", name,
                                op_type, outputs[i]);
    }
    d5_status s =
        grow((void **)&net->nodes, &net->node_cap, net->nnodes, sizeof(d5__node), "network nodes");
    if (s != D5_OK) return s;
    d5__node *n = &net->nodes[net->nnodes];
    memset(n, 0, sizeof *n);
    n->nin = ninputs;
    n->nout = noutputs;
    if (!(n->name = d5_strdup(name, "node name")) ||
        !(n->op_type = d5_strdup(op_type, "node op_type")) ||
        !(n->domain =
              d5_strdup(domain && strcmp(domain, "ai.onnx") != 0 ? domain : "", "node domain")))
        s = D5_ERR_NOMEM;
    if (s == D5_OK) s = copy_names(inputs, ninputs, &n->inputs, "node inputs");
    if (s == D5_OK) s = copy_names(outputs, noutputs, &n->outputs, "node outputs");
    if (s == D5_OK) s = d5__attrs_copy(attrs, &n->attrs, &n->nattrs);
    if (s == D5_OK) s = index_add(net, &net->node_index, node_name, net->nnodes);
    if (s != D5_OK) {
        node_clear(n);
        return s;
    }
    n->attrs_view.items = n->attrs;
    n->attrs_view.count = n->nattrs;
    int32_t me = net->nnodes++;
    for (int32_t i = 0; i < noutputs; i++) {
        int32_t v = d5__network_value(net, outputs[i]);
        if (v < 0 && (s = value_new(net, outputs[i], D5_VALUE_INTERMEDIATE, &v)) != D5_OK) {
            /* Undo: the node goes, values created so far stay as unproduced names. */
            for (int32_t j = 0; j < i; j++) {
                int32_t w = d5__network_value(net, outputs[j]);
                if (w >= 0) net->values[w].producer = -1;
            }
            node_clear(n);
            net->nnodes--;
            (void)index_rebuild(net, &net->node_index, node_name, net->nnodes);
            return s;
        }
        net->values[v].producer = me;
    }
    if (index) *index = me;
    return D5_OK;
}

/* Drops values that nothing provides and nothing declares any more. */
static d5_status drop_orphans(d5_network *net)
{
    int32_t *remap = d5_alloc((size_t)(net->nvalues ? net->nvalues : 1) * sizeof *remap, "remap");
    if (!remap) return D5_ERR_NOMEM;
    int32_t k = 0;
    for (int32_t i = 0; i < net->nvalues; i++) {
        d5__value *v = &net->values[i];
        if (v->kind == D5_VALUE_INTERMEDIATE && v->producer < 0 && !v->is_output) {
            value_clear(v);
            remap[i] = -1;
            continue;
        }
        remap[i] = k;
        if (k != i) net->values[k] = *v;
        k++;
    }
    net->nvalues = k;
    for (int32_t i = 0; i < net->ninputs; i++) net->inputs[i] = remap[net->inputs[i]];
    d5_free(remap);
    return index_rebuild(net, &net->value_index, value_name, net->nvalues);
}

d5_status d5_network_remove_node(d5_network *net, const char *name)
{
    int32_t idx;
    d5_status s = d5_network_find_node(net, name, &idx);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < net->nvalues; i++) {
        if (net->values[i].producer == idx) {
            net->values[i].producer = -1;
            net->values[i].known = 0;
        } else if (net->values[i].producer > idx) {
            net->values[i].producer--;
        }
    }
    node_clear(&net->nodes[idx]);
    memmove(net->nodes + idx, net->nodes + idx + 1,
            (size_t)(net->nnodes - idx - 1) * sizeof *net->nodes);
    net->nnodes--;
    s = index_rebuild(net, &net->node_index, node_name, net->nnodes);
    return s == D5_OK ? drop_orphans(net) : s;
}

int d5__same_desc(const d5_tensor_desc *a, const d5_tensor_desc *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

d5_status d5__network_remove_nodes(d5_network *net, const unsigned char *dead)
{
    int32_t *remap = d5_alloc((size_t)(net->nnodes ? net->nnodes : 1) * sizeof *remap, "remap");
    if (!remap) return D5_ERR_NOMEM;
    int32_t k = 0;
    for (int32_t i = 0; i < net->nnodes; i++) {
        if (dead[i]) {
            node_clear(&net->nodes[i]);
            remap[i] = -1;
            continue;
        }
        remap[i] = k;
        if (k != i) net->nodes[k] = net->nodes[i];
        k++;
    }
    net->nnodes = k;
    for (int32_t i = 0; i < net->nvalues; i++) {
        d5__value *v = &net->values[i];
        if (v->producer < 0) continue;
        v->producer = remap[v->producer];
        if (v->producer < 0) v->known = 0;
    }
    d5_free(remap);
    d5_status s = index_rebuild(net, &net->node_index, node_name, net->nnodes);
    return s == D5_OK ? drop_orphans(net) : s;
}

d5_status d5__network_move_output(d5_network *net, int32_t node, int32_t slot, int32_t value)
{
    d5__node *n = &net->nodes[node];
    d5__value *to = &net->values[value];
    char *copy = d5_strdup(to->name, "node output");
    if (!copy) return D5_ERR_NOMEM;
    int32_t from = d5__network_value(net, n->outputs[slot]);
    if (from >= 0) {
        net->values[from].producer = -1;
        net->values[from].known = 0;
    }
    d5_free(n->outputs[slot]);
    n->outputs[slot] = copy;
    to->producer = node;
    return D5_OK;
}

d5_status d5__network_rewrite_node(d5_network *net, int32_t node, const char *name,
                                   const char *op_type, const d5_attr *extra)
{
    d5__node *n = &net->nodes[node];
    if (name && strcmp(name, n->name) != 0 && d5__network_node(net, name) >= 0)
        return d5_error(D5_ERR_INVALID, "node '%s': the name is already taken", name);
    char *new_name = name ? d5_strdup(name, "node name") : NULL;
    char *new_type = op_type ? d5_strdup(op_type, "node op_type") : NULL;
    d5_attr *attrs = NULL;
    int32_t nattrs = 0;
    d5_status s = (name && !new_name) || (op_type && !new_type) ? D5_ERR_NOMEM : D5_OK;
    if (s == D5_OK && extra) {
        d5_attr *all = d5_calloc((size_t)n->nattrs + 1, sizeof *all, "node attributes");
        if (!all) {
            s = D5_ERR_NOMEM;
        } else {
            if (n->nattrs) memcpy(all, n->attrs, (size_t)n->nattrs * sizeof *all);
            all[n->nattrs] = *extra;
            d5_attrs view = {all, n->nattrs + 1};
            s = d5__attrs_copy(&view, &attrs, &nattrs);
            d5_free(all);
        }
    }
    if (s != D5_OK) {
        d5_free(new_name);
        d5_free(new_type);
        return s;
    }
    if (new_type) {
        d5_free(n->op_type);
        n->op_type = new_type;
    }
    if (extra) {
        d5__attrs_free(n->attrs, n->nattrs);
        n->attrs = attrs;
        n->nattrs = nattrs;
        n->attrs_view.items = attrs;
        n->attrs_view.count = nattrs;
    }
    if (new_name) {
        d5_free(n->name);
        n->name = new_name;
        s = index_rebuild(net, &net->node_index, node_name, net->nnodes);
    }
    return s;
}

d5_status d5__network_set_attrs(d5_network *net, int32_t node, const d5_attr *attrs, int32_t n)
{
    d5__node *nd = &net->nodes[node];
    d5_attr *copy = NULL;
    int32_t ncopy = 0;
    d5_attrs view = {attrs, n};
    d5_status s = n ? d5__attrs_copy(&view, &copy, &ncopy) : D5_OK;
    if (s != D5_OK) return s;
    d5__attrs_free(nd->attrs, nd->nattrs);
    nd->attrs = copy;
    nd->nattrs = ncopy;
    nd->attrs_view.items = copy;
    nd->attrs_view.count = ncopy;
    return D5_OK;
}

d5_status d5__network_drop_unread(d5_network *net)
{
    unsigned char *read = d5_calloc((size_t)(net->nvalues ? net->nvalues : 1), 1, "read values");
    if (!read) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < net->nnodes; i++)
        for (int32_t j = 0; j < net->nodes[i].nin; j++) {
            int32_t v = d5__network_value(net, net->nodes[i].inputs[j]);
            if (v >= 0) read[v] = 1;
        }
    for (int32_t i = 0; i < net->nvalues; i++) {
        d5__value *v = &net->values[i];
        /* Becoming an unproduced intermediate, drop_orphans takes it away. */
        if (v->kind == D5_VALUE_INITIALIZER && !read[i] && !v->is_output) {
            v->kind = D5_VALUE_INTERMEDIATE;
            v->producer = -1;
        }
    }
    d5_free(read);
    return drop_orphans(net);
}

d5_status d5_network_set_node_input(d5_network *net, const char *node, int32_t slot,
                                    const char *value)
{
    int32_t idx;
    d5_status s = d5_network_find_node(net, node, &idx);
    if (s != D5_OK) return s;
    d5__node *n = &net->nodes[idx];
    if (slot < 0 || slot > n->nin)
        return d5_error(D5_ERR_RANGE, "node '%s' (%s) has %d inputs; slot %d is out of range",
                        n->name, n->op_type, (int)n->nin, (int)slot);
    char *copy = d5_strdup(value ? value : "", "node input");
    if (!copy) return D5_ERR_NOMEM;
    if (slot == n->nin) { /* appending one input */
        char **a = d5_realloc(n->inputs, (size_t)n->nin * sizeof *a,
                              (size_t)(n->nin + 1) * sizeof *a, "node inputs");
        if (!a) {
            d5_free(copy);
            return D5_ERR_NOMEM;
        }
        n->inputs = a;
        n->inputs[n->nin++] = copy;
        return D5_OK;
    }
    d5_free(n->inputs[slot]);
    n->inputs[slot] = copy;
    return D5_OK;
}
