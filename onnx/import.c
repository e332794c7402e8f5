/* ONNX ModelProto -> d5_network, through the public graph API of network.h.
 * https://onnx.ai/onnx/repo-docs/IR.html */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* What the import is working on, for messages. */
typedef struct importer {
    d5_network *net;
    const char *base_dir;
    const d5_network *top; /* the model's graph; net is a subgraph of it when they differ */
} importer;

/* ---- Value types ---- */

static const char *type_case_name(Onnx__TypeProto__ValueCase c)
{
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return "tensor";
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "sparse tensor";
    default: return "unknown";
    }
}

/* Reads a tensor type: *typed when it has an element type, *shaped when it
 * has a shape (dimensions -1 where unknown, with their dim_param names). */
static d5_status tensor_type(const Onnx__TypeProto__Tensor *tt, const char *role, const char *name,
                             d5_tensor_desc *desc, const char **dim_params, int *typed, int *shaped)
{
    char tbuf[32];
    if (!tt || !tt->has_elem_type || tt->elem_type == 0) return D5_OK;
    d5_dtype dt = d5__onnx_dtype(tt->elem_type);
    if (dt == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_UNSUPPORTED, "%s '%s' has data type %s, which d5 does not support",
                        role, name, d5__onnx_type_name(tt->elem_type, tbuf, sizeof tbuf));
    desc->dtype = dt;
    *typed = 1;
    if (!tt->shape) return D5_OK;
    if (tt->shape->n_dim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "%s '%s' has %zu dimensions; d5 supports at most %d",
                        role, name, tt->shape->n_dim, D5_MAX_DIMS);
    desc->ndim = (int32_t)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        desc->shape[i] = -1;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return d5_error(D5_ERR_FORMAT, "%s '%s' has a negative size %lld in dimension %zu",
                                role, name, (long long)d->dim_value, i);
            desc->shape[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && d->dim_param[0]) {
            dim_params[i] = d->dim_param;
        }
    }
    *shaped = 1;
    return D5_OK;
}

/* The tensor type inside a type: a tensor's own, a sequence's elements', an
 * optional's contents'; *type says which (a d5_type). Maps and sparse
 * tensors are D5_ERR_UNSUPPORTED. */
static d5_status inner_type(const Onnx__TypeProto *type, const char *role, const char *name,
                            int32_t *kind, const Onnx__TypeProto__Tensor **tt)
{
    *kind = D5_TYPE_TENSOR;
    *tt = NULL;
    const Onnx__TypeProto *inner = type;
    if (type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
        inner = type->optional_type ? type->optional_type->elem_type : NULL;
        *kind = D5_TYPE_OPTIONAL;
        if (inner && inner->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            *kind = D5_TYPE_OPTIONAL_SEQUENCE;
            inner = inner->sequence_type ? inner->sequence_type->elem_type : NULL;
        }
    } else if (type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
        inner = type->sequence_type ? type->sequence_type->elem_type : NULL;
        *kind = D5_TYPE_SEQUENCE;
    }
    if (!inner || inner->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return D5_OK;
    if (inner->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s '%s' has a type with %s elements; d5 supports tensors, sequences of "
                        "tensors and optionals of either",
                        role, name, type_case_name(inner->value_case));
    *tt = inner->tensor_type;
    return D5_OK;
}

/* Reads a ValueInfoProto's type: *kind (a d5_type), and the tensor type of
 * the value or of its elements as tensor_type() gives it. */
static d5_status value_type(const Onnx__ValueInfoProto *vi, const char *role, int32_t *kind,
                            d5_tensor_desc *desc, const char **dim_params, int *typed, int *shaped)
{
    *typed = *shaped = 0;
    *kind = D5_TYPE_TENSOR;
    memset(desc, 0, sizeof *desc);
    for (int i = 0; i < D5_MAX_DIMS; i++) dim_params[i] = NULL;
    const Onnx__TypeProto *type = vi->type;
    if (!type || type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return D5_OK;
    if (type->value_case == ONNX__TYPE_PROTO__VALUE_MAP_TYPE ||
        type->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s '%s' has a %s type; d5 supports tensors, sequences of tensors and "
                        "optionals",
                        role, vi->name, type_case_name(type->value_case));
    const Onnx__TypeProto__Tensor *tt;
    d5_status s = inner_type(type, role, vi->name, kind, &tt);
    if (s == D5_OK) s = tensor_type(tt, role, vi->name, desc, dim_params, typed, shaped);
    return s;
}

/* A TYPE_PROTO attribute (Optional's type) as d5 keeps it: a STRING,
 * "tensor float32" or "sequence float32". */
static d5_status type_attr_text(const Onnx__TypeProto *type, const char *label, const char *attr,
                                char *buf, size_t size)
{
    int32_t kind;
    const Onnx__TypeProto__Tensor *tt;
    d5_status s = inner_type(type, label, attr, &kind, &tt);
    if (s != D5_OK) return s;
    d5_dtype dt = tt && tt->has_elem_type ? d5__onnx_dtype(tt->elem_type) : D5_DTYPE_INVALID;
    snprintf(buf, size, "%s %s", kind == D5_TYPE_SEQUENCE ? "sequence" : "tensor",
             dt == D5_DTYPE_INVALID ? "unknown" : d5_dtype_name(dt));
    return D5_OK;
}

/* ---- Graph parts ---- */

static d5_status import_initializers(importer *im, const Onnx__GraphProto *g)
{
    char what[200];
    if (g->n_sparse_initializer)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "the graph has %zu sparse initializers, which d5 does not support",
                        g->n_sparse_initializer);
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        if (!tp->name || !tp->name[0])
            return d5_error(D5_ERR_FORMAT, "initializer %zu has no name", i);
        int32_t index;
        if (d5_network_find_value(im->net, tp->name, &index) == D5_OK)
            return d5_error(D5_ERR_FORMAT, "initializer '%s' appears twice", tp->name);
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        d5_tensor t;
        d5_status s = d5__onnx_tensor_from_proto(tp, im->base_dir, what, &t);
        if (s == D5_OK) s = d5_network_add_initializer_take(im->net, tp->name, &t);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

static d5_status import_inputs(importer *im, const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !vi->name[0])
            return d5_error(D5_ERR_FORMAT, "graph input %zu has no name", i);
        /* IR < 4 lists initializers as inputs too: the initializer stands. */
        int32_t index;
        d5_value_info info;
        if (d5_network_find_value(im->net, vi->name, &index) == D5_OK) {
            d5_network_value_at(im->net, index, &info);
            if (info.kind == D5_VALUE_INITIALIZER) continue;
        }
        d5_tensor_desc desc;
        const char *dim_params[D5_MAX_DIMS];
        int typed, shaped;
        int32_t kind;
        int sub = im->net != im->top;
        d5_status s = value_type(vi, "graph input", &kind, &desc, dim_params, &typed, &shaped);
        if (s != D5_OK) return s;
        /* A subgraph's inputs take the type of what the node binds; a
         * sequence's elements may have no declared shape. */
        if (!typed && !sub && kind == D5_TYPE_TENSOR)
            return d5_error(D5_ERR_FORMAT, "graph input '%s' has no tensor element type", vi->name);
        if (!shaped && !sub && kind == D5_TYPE_TENSOR)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "graph input '%s' has no shape (unknown rank), which d5 does not "
                            "support",
                            vi->name);
        if (!shaped) desc.ndim = -1;
        s = d5_network_add_input_typed(im->net, vi->name, kind, typed ? &desc : NULL, dim_params);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

static d5_status import_outputs(importer *im, const Onnx__GraphProto *g)
{
    for (size_t i = 0; i < g->n_output; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        if (!vi->name || !vi->name[0])
            return d5_error(D5_ERR_FORMAT, "graph output %zu has no name", i);
        d5_tensor_desc desc;
        const char *dim_params[D5_MAX_DIMS];
        int typed, shaped;
        int32_t kind;
        d5_status s = value_type(vi, "graph output", &kind, &desc, dim_params, &typed, &shaped);
        if (s == D5_OK)
            s = d5_network_add_output(im->net, vi->name,
                                      typed && shaped && kind == D5_TYPE_TENSOR ? &desc : NULL);
        if (s == D5_OK && kind != D5_TYPE_TENSOR)
            s = d5_network_set_output_type(im->net, vi->name, kind);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* ---- Nodes and attributes ---- */

static const char *attr_type_name(int type)
{
    static const char *const names[] = {
        "UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
        "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    if (type >= 0 && (size_t)type < sizeof names / sizeof names[0]) return names[type];
    return "unknown";
}

/* The attribute's type; models written before the type field existed only
 * set the value, so it is deduced from the field that is present. */
static int attr_type(const Onnx__AttributeProto *ap)
{
    if (ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)ap->type;
    if (ap->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (ap->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (ap->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (ap->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (ap->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (ap->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (ap->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (ap->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (ap->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    if (ap->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    if (ap->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    if (ap->tp) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* Converts one attribute. Memory it needs comes from the arena, except a
 * tensor's data, which *tensor owns (free with d5_tensor_free). */
static d5_status convert_attr(importer *im, const Onnx__AttributeProto *ap, const char *label,
                              d5__arena *arena, d5_attr *out, d5_tensor *tensor)
{
    memset(out, 0, sizeof *out);
    if (!ap->name || !ap->name[0])
        return d5_error(D5_ERR_FORMAT, "%s: an attribute has no name", label);
    out->name = ap->name;
    int type = attr_type(ap);
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        out->type = D5_ATTR_INT;
        out->i = ap->i;
        return D5_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        out->type = D5_ATTR_FLOAT;
        out->f = ap->f;
        return D5_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        out->type = D5_ATTR_STRING;
        if (ap->s.len && memchr(ap->s.data, '\0', ap->s.len))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s: attribute '%s' is a string with a NUL byte, which d5 does not "
                            "support",
                            label, ap->name);
        char *s = d5__arena_alloc(arena, ap->s.len + 1);
        if (!s) return D5_ERR_NOMEM;
        if (ap->s.len) memcpy(s, ap->s.data, ap->s.len);
        out->s = s;
        return D5_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        /* d5's attributes have no list of strings: the strings joined by
         * commas in one STRING (RNN's activations "Sigmoid,Tanh,Tanh"). */
        size_t len = 1;
        for (size_t k = 0; k < ap->n_strings; k++) {
            const ProtobufCBinaryData *b = &ap->strings[k];
            if (b->len && (memchr(b->data, '\0', b->len) || memchr(b->data, ',', b->len)))
                return d5_error(D5_ERR_UNSUPPORTED,
                                "%s: attribute '%s' (STRINGS): string %zu holds a NUL byte or a "
                                "comma, which d5's comma-joined form cannot carry",
                                label, ap->name, k);
            len += b->len + 1;
        }
        char *s = d5__arena_alloc(arena, len);
        if (!s) return D5_ERR_NOMEM;
        size_t at = 0;
        for (size_t k = 0; k < ap->n_strings; k++) {
            if (k) s[at++] = ',';
            if (ap->strings[k].len) memcpy(s + at, ap->strings[k].data, ap->strings[k].len);
            at += ap->strings[k].len;
        }
        s[at] = '\0';
        out->type = D5_ATTR_STRING;
        out->s = s;
        out->count = (int64_t)ap->n_strings; /* 0 for a STRING: export writes STRINGS back */
        return D5_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        out->type = D5_ATTR_INTS;
        out->ints = ap->ints;
        out->count = (int64_t)ap->n_ints;
        return D5_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        out->type = D5_ATTR_FLOATS;
        double *f = d5__arena_array(arena, ap->n_floats ? ap->n_floats : 1, sizeof(double));
        if (!f) return D5_ERR_NOMEM;
        for (size_t k = 0; k < ap->n_floats; k++) f[k] = ap->floats[k];
        out->floats = f;
        out->count = (int64_t)ap->n_floats;
        return D5_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!ap->t)
            return d5_error(D5_ERR_FORMAT, "%s: attribute '%s' has type TENSOR but no tensor",
                            label, ap->name);
        char what[300];
        if (snprintf(what, sizeof what, "%s: attribute '%s'", label, ap->name) < 0) what[0] = 0;
        d5_status s = d5__onnx_tensor_from_proto(ap->t, im->base_dir, what, tensor);
        if (s != D5_OK) return s;
        out->type = D5_ATTR_TENSOR;
        out->tensor = tensor;
        return D5_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: {
        char text[64];
        if (!ap->tp)
            return d5_error(D5_ERR_FORMAT, "%s: attribute '%s' has type TYPE_PROTO but no type",
                            label, ap->name);
        d5_status s = type_attr_text(ap->tp, label, ap->name, text, sizeof text);
        char *copy = s == D5_OK ? d5__arena_alloc(arena, strlen(text) + 1) : NULL;
        if (s == D5_OK && !copy) s = D5_ERR_NOMEM;
        if (s != D5_OK) return s;
        out->type = D5_ATTR_STRING;
        out->s = strcpy(copy, text);
        return D5_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        return d5_error(D5_ERR_FORMAT, "%s: attribute '%s' has no type and no value", label,
                        ap->name);
    default:
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: attribute '%s' has type %s, which d5 does not "
                        "support",
                        label, ap->name, attr_type_name(type));
    }
}

static d5_status import_graph(importer *im, const Onnx__GraphProto *g);

/* Imports graph attribute `ap` of node `node` as a subgraph. */
static d5_status import_subgraph(importer *im, int32_t node, const Onnx__AttributeProto *ap,
                                 const char *label)
{
    if (!ap->g)
        return d5_error(D5_ERR_FORMAT, "%s: attribute '%s' has type GRAPH but no graph", label,
                        ap->name);
    importer sub = {NULL, im->base_dir, im->top};
    d5_status s = d5_network_create(ap->g->name, &sub.net);
    for (int32_t i = 0; s == D5_OK && i < d5_network_opset_count(im->top); i++) {
        const char *domain;
        int64_t version;
        d5_network_opset_at(im->top, i, &domain, &version);
        s = d5_network_set_opset(sub.net, domain, version);
    }
    if (s == D5_OK) s = import_graph(&sub, ap->g);
    if (s != D5_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", d5_last_error());
        d5_network_free(sub.net);
        return d5_error(s, "%s: graph '%s': %s", label, ap->name, msg);
    }
    return d5_network_attach_graph(im->net, node, ap->name, sub.net);
}

static d5_status import_node(importer *im, const Onnx__NodeProto *n, size_t index)
{
    char label[300];
    const char *op = n->op_type ? n->op_type : "";
    if (n->name && n->name[0])
        snprintf(label, sizeof label, "node '%s' (%s)", n->name, op);
    else
        snprintf(label, sizeof label, "node #%zu (%s)", index, op);
    if (!op[0]) return d5_error(D5_ERR_FORMAT, "%s has no op_type", label);

    /* Omitted optional outputs at the end are dropped; d5 names every output,
     * so one omitted before a given one (RNN's Y before Y_h) gets a name of
     * its own that no ONNX name can take ("" is not a valid ONNX name, and
     * these start with "__omitted:"), read by no node. */
    size_t nout = n->n_output;
    while (nout > 0 && n->output[nout - 1][0] == '\0') nout--;
    if (nout == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "%s has no outputs, which d5 does not support", label);
    if (n->n_input > INT32_MAX || nout > INT32_MAX || n->n_attribute > INT32_MAX)
        return d5_error(D5_ERR_UNSUPPORTED, "%s has too many inputs, outputs or attributes", label);

    d5__arena arena = {NULL};
    d5_attr *attrs = NULL;
    d5_tensor *tensors = NULL;
    d5_status s = D5_OK;
    const char **outputs = d5__arena_array(&arena, nout, sizeof *outputs);
    if (!outputs) s = D5_ERR_NOMEM;
    for (size_t k = 0; s == D5_OK && k < nout; k++) {
        outputs[k] = n->output[k];
        if (n->output[k][0] != '\0') continue;
        char name[64];
        snprintf(name, sizeof name, "__omitted:%zu:%zu", index, k);
        char *copy = d5__arena_alloc(&arena, strlen(name) + 1);
        if (!copy) s = D5_ERR_NOMEM;
        if (copy) outputs[k] = strcpy(copy, name);
    }
    if (n->n_attribute) {
        attrs = d5__arena_array(&arena, n->n_attribute, sizeof *attrs);
        tensors = d5__arena_array(&arena, n->n_attribute, sizeof *tensors);
        if (!attrs || !tensors) s = D5_ERR_NOMEM;
    }
    /* Graph attributes become the node's subgraphs, the others its attributes. */
    int32_t nattrs = 0, node = -1;
    for (size_t k = 0; s == D5_OK && k < n->n_attribute; k++) {
        if (attr_type(n->attribute[k]) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) continue;
        s = convert_attr(im, n->attribute[k], label, &arena, &attrs[nattrs], &tensors[nattrs]);
        nattrs++;
    }
    if (s == D5_OK) {
        d5_attrs view = {attrs, nattrs};
        s = d5_network_add_node(im->net, n->name && n->name[0] ? n->name : NULL, op, n->domain,
                                (const char *const *)n->input, (int32_t)n->n_input, outputs,
                                (int32_t)nout, &view, &node);
    }
    for (size_t k = 0; s == D5_OK && k < n->n_attribute; k++)
        if (attr_type(n->attribute[k]) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)
            s = import_subgraph(im, node, n->attribute[k], label);
    for (int32_t k = 0; tensors && k < nattrs; k++) d5_tensor_free(&tensors[k]);
    d5__arena_free(&arena);
    return s;
}

/* ---- The model ---- */

/* Refuses an operator set newer than d5 knows (D5_ONNX_NEWEST_OPSET). Other
 * domains are judged by their operators, when a node names one. */
static d5_status check_opset(const Onnx__OperatorSetIdProto *o)
{
    static const struct {
        const char *domain;
        int64_t newest;
    } known[] = {{"", D5_ONNX_NEWEST_OPSET}, {"ai.onnx.preview.training", 1}};
    const char *domain = o->domain && strcmp(o->domain, "ai.onnx") != 0 ? o->domain : "";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(domain, known[i].domain) == 0 && o->version > known[i].newest)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "imports opset %lld of domain '%s', newer than the newest d5 knows "
                            "(%lld): its operators may have changed meaning",
                            (long long)o->version, domain[0] ? domain : "ai.onnx",
                            (long long)known[i].newest);
    return D5_OK;
}

static d5_status import_model(importer *im, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *g = m->graph;
    if (!g)
        return d5_error(D5_ERR_FORMAT, "not an ONNX model (%s)",
                        m->has_ir_version ? "no graph" : "no ir_version and no graph");
    if (m->n_functions)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "the model defines %zu local functions ('%s'), which d5 does not support",
                        m->n_functions, m->functions[0]->name ? m->functions[0]->name : "");
    d5_status s = d5_network_create(g->name, &im->net);
    for (size_t i = 0; s == D5_OK && i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->has_version)
            return d5_error(D5_ERR_FORMAT, "opset import of domain '%s' has no version",
                            o->domain ? o->domain : "");
        s = check_opset(o);
        if (s == D5_OK) s = d5_network_set_opset(im->net, o->domain, o->version);
    }
    im->top = im->net;
    return s == D5_OK ? import_graph(im, g) : s;
}

static d5_status import_graph(importer *im, const Onnx__GraphProto *g)
{
    d5_status s = import_initializers(im, g);
    if (s == D5_OK) s = import_inputs(im, g);
    for (size_t i = 0; s == D5_OK && i < g->n_node; i++) s = import_node(im, g->node[i], i);
    if (s == D5_OK) s = import_outputs(im, g);
    return s;
}

d5_status d5_onnx_load_buffer(const void *data, size_t size, const char *base_dir, const char *what,
                              d5_network **out)
{
    if (!out || (!data && size))
        return d5_error(D5_ERR_INVALID, "d5_onnx_load_buffer: NULL argument");
    if (!what) what = "ONNX model";
    if (size == 0) return d5_error(D5_ERR_FORMAT, "%s: empty (0 bytes), not an ONNX model", what);
    if (size > D5__ONNX_MAX_MESSAGE)
        return d5_error(D5_ERR_UNSUPPORTED, "%s: %zu bytes, more than protobuf's 2 GiB limit", what,
                        size);
    d5_status s = d5__onnx_check_depth(&onnx__model_proto__descriptor, data, size);
    if (s != D5_OK) return d5__onnx_prefix(s, what);
    d5__pb_alloc pa;
    d5__pb_alloc_init(&pa);
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pa.base, size, data);
    if (!m)
        return pa.failed
                   ? d5_error(D5_ERR_NOMEM, "%s: out of memory parsing the model", what)
                   : d5_error(D5_ERR_FORMAT, "%s: not an ONNX model (protobuf parse failed)", what);
    importer im = {NULL, base_dir, NULL};
    s = import_model(&im, m);
    onnx__model_proto__free_unpacked(m, &pa.base);
    if (s != D5_OK) {
        d5_network_free(im.net);
        return d5__onnx_prefix(s, what);
    }
    *out = im.net;
    return D5_OK;
}

d5_status d5_onnx_load(const char *path, d5_network **out)
{
    if (!path || !out) return d5_error(D5_ERR_INVALID, "d5_onnx_load: NULL argument");
    void *data = NULL;
    size_t size = 0;
    d5_status s = d5__onnx_read_file(path, D5__ONNX_MAX_MESSAGE, "ONNX model", &data, &size);
    if (s != D5_OK) return s;
    char *dir = d5__onnx_dirname(path);
    if (!dir) s = d5__onnx_prefix(D5_ERR_NOMEM, path);
    if (s == D5_OK) s = d5_onnx_load_buffer(data, size, dir, path, out);
    d5_free(dir);
    d5_free(data);
    return s;
}
