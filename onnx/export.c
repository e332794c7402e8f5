/* d5_network -> ONNX ModelProto (IR version 8): opsets, nodes in topological
 * order with their attributes, initializers as raw_data, inputs and outputs
 * with their shapes, and value_info for the intermediate values whose
 * descriptor is known. https://onnx.ai/onnx/repo-docs/IR.html */
#include "internal.h"

#include <string.h>

#define D5__ONNX_IR_VERSION 8

/* A zero-initialised message of the given type from the arena. */
static void *pb_new(d5__arena *a, const ProtobufCMessageDescriptor *d)
{
    void *m = d5__arena_alloc(a, d->sizeof_message);
    if (m) protobuf_c_message_init(d, m);
    return m;
}

/* ---- Values ---- */

/* The TypeProto of a tensor of v's descriptor; NULL in *out when its type
 * is not known. */
static d5_status tensor_type_proto(d5__arena *a, const d5_value_info *v, Onnx__TypeProto **out)
{
    *out = NULL;
    if (d5__onnx_type_of((d5_dtype)v->desc.dtype) == 0) return D5_OK; /* type not known */
    Onnx__TypeProto *type = pb_new(a, &onnx__type_proto__descriptor);
    Onnx__TypeProto__Tensor *tt = pb_new(a, &onnx__type_proto__tensor__descriptor);
    if (!type || !tt) return D5_ERR_NOMEM;
    *out = type;
    type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    type->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = d5__onnx_type_of((d5_dtype)v->desc.dtype);
    if (v->desc.ndim < 0 || v->desc.ndim > D5_MAX_DIMS) return D5_OK; /* rank not known */
    Onnx__TensorShapeProto *shape = pb_new(a, &onnx__tensor_shape_proto__descriptor);
    if (!shape) return D5_ERR_NOMEM;
    tt->shape = shape;
    shape->n_dim = (size_t)v->desc.ndim;
    if (v->desc.ndim == 0) return D5_OK;
    shape->dim = d5__arena_array(a, shape->n_dim, sizeof *shape->dim);
    if (!shape->dim) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < v->desc.ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d =
            pb_new(a, &onnx__tensor_shape_proto__dimension__descriptor);
        if (!d) return D5_ERR_NOMEM;
        if (v->desc.shape[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = v->desc.shape[i];
        } else if (v->dim_params[i] && v->dim_params[i][0]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)v->dim_params[i];
        }
        shape->dim[i] = d;
    }
    return D5_OK;
}

/* Wraps an element type (NULL: unknown) in a sequence or optional type. */
static Onnx__TypeProto *wrap_type(d5__arena *a, Onnx__TypeProto *elem, int optional)
{
    Onnx__TypeProto *type = pb_new(a, &onnx__type_proto__descriptor);
    if (!type || (!elem && !(elem = pb_new(a, &onnx__type_proto__descriptor)))) return NULL;
    if (optional) {
        Onnx__TypeProto__Optional *o = pb_new(a, &onnx__type_proto__optional__descriptor);
        if (!o) return NULL;
        o->elem_type = elem;
        type->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        type->optional_type = o;
    } else {
        Onnx__TypeProto__Sequence *q = pb_new(a, &onnx__type_proto__sequence__descriptor);
        if (!q) return NULL;
        q->elem_type = elem;
        type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        type->sequence_type = q;
    }
    return type;
}

static d5_status value_proto(d5__arena *a, const d5_value_info *v, Onnx__ValueInfoProto **out)
{
    Onnx__ValueInfoProto *p = pb_new(a, &onnx__value_info_proto__descriptor);
    if (!p) return D5_ERR_NOMEM;
    p->name = (char *)v->name;
    *out = p;
    d5_status s = tensor_type_proto(a, v, &p->type);
    if (s != D5_OK || v->type == D5_TYPE_TENSOR) return s;
    /* A sequence or optional: the tensor type is its elements'. */
    if (v->type == D5_TYPE_SEQUENCE || v->type == D5_TYPE_OPTIONAL_SEQUENCE)
        p->type = wrap_type(a, p->type, 0);
    if (p->type && v->type != D5_TYPE_SEQUENCE) p->type = wrap_type(a, p->type, 1);
    return p->type ? D5_OK : D5_ERR_NOMEM;
}

/* Optional's `type`, which d5 holds as a STRING ("sequence float32"), as the
 * TYPE_PROTO it was. */
static d5_status type_attr_proto(d5__arena *a, const char *text, Onnx__TypeProto **out)
{
    d5_value_info v;
    memset(&v, 0, sizeof v);
    v.desc.ndim = -1;
    const char *space = strchr(text, ' ');
    d5_dtype dt = D5_DTYPE_INVALID;
    if (space && d5_dtype_parse(space + 1, &dt) != D5_OK) dt = D5_DTYPE_INVALID;
    v.desc.dtype = dt;
    d5_status s = tensor_type_proto(a, &v, out);
    if (s == D5_OK && strncmp(text, "sequence", 8) == 0 && !(*out = wrap_type(a, *out, 0)))
        s = D5_ERR_NOMEM;
    if (s == D5_OK && !*out && !(*out = pb_new(a, &onnx__type_proto__descriptor))) s = D5_ERR_NOMEM;
    return s;
}

/* The ValueInfoProto of a named value of the network. */
static d5_status named_value_proto(const d5_network *net, d5__arena *a, const char *name,
                                   Onnx__ValueInfoProto **out)
{
    int32_t index;
    d5_value_info v;
    memset(&v, 0, sizeof v);
    if (d5_network_find_value(net, name, &index) == D5_OK) {
        d5_network_value_at(net, index, &v);
    } else {
        v.name = name;
        v.desc.ndim = -1;
    }
    return value_proto(a, &v, out);
}

/* ---- Nodes ---- */

static d5_status attr_proto(d5__arena *a, const d5_attr *at, const char *node,
                            Onnx__AttributeProto **out)
{
    Onnx__AttributeProto *p = pb_new(a, &onnx__attribute_proto__descriptor);
    if (!p) return D5_ERR_NOMEM;
    p->name = (char *)at->name;
    p->has_type = 1;
    switch (at->type) {
    case D5_ATTR_INT:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        p->has_i = 1;
        p->i = at->i;
        break;
    case D5_ATTR_FLOAT:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        p->has_f = 1;
        p->f = (float)at->f;
        break;
    case D5_ATTR_STRING:
        if (at->count > 0) {
            /* ONNX's STRINGS, held joined by commas: `count` strings. */
            const char *text = at->s ? at->s : "";
            p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
            p->strings = d5__arena_array(a, (size_t)at->count, sizeof *p->strings);
            if (!p->strings) return D5_ERR_NOMEM;
            for (const char *c = text;; c++) {
                const char *end = strchr(c, ',');
                size_t len = end ? (size_t)(end - c) : strlen(c);
                if (p->n_strings == (size_t)at->count)
                    return d5_error(D5_ERR_INVALID,
                                    "node '%s': attribute '%s' holds more than its %lld strings",
                                    node, at->name, (long long)at->count);
                p->strings[p->n_strings].data = (uint8_t *)c;
                p->strings[p->n_strings++].len = len;
                if (!end) break;
                c = end;
            }
            break;
        }
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        p->has_s = 1;
        p->s.data = (uint8_t *)(at->s ? at->s : "");
        p->s.len = strlen((const char *)p->s.data);
        break;
    case D5_ATTR_INTS:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        p->n_ints = at->count > 0 ? (size_t)at->count : 0;
        p->ints = (int64_t *)at->ints;
        break;
    case D5_ATTR_FLOATS:
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        p->n_floats = at->count > 0 ? (size_t)at->count : 0;
        if (p->n_floats) {
            p->floats = d5__arena_array(a, p->n_floats, sizeof(float));
            if (!p->floats) return D5_ERR_NOMEM;
            for (size_t k = 0; k < p->n_floats; k++) p->floats[k] = (float)at->floats[k];
        }
        break;
    case D5_ATTR_TENSOR: {
        p->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        if (!(p->t = pb_new(a, &onnx__tensor_proto__descriptor))) return D5_ERR_NOMEM;
        if (!at->tensor)
            return d5_error(D5_ERR_INVALID, "node '%s': attribute '%s' has no tensor", node,
                            at->name);
        d5_status s = d5__onnx_tensor_to_proto(&at->tensor->desc, at->tensor->data, NULL, a, p->t);
        if (s != D5_OK)
            return d5_error(s, "node '%s': attribute '%s': %s", node, at->name, d5_last_error());
        break;
    }
    default:
        return d5_error(D5_ERR_INVALID, "node '%s': attribute '%s' has unknown type %d", node,
                        at->name, (int)at->type);
    }
    *out = p;
    return D5_OK;
}

static d5_status graph_proto(const d5_network *net, d5__arena *a, Onnx__GraphProto *g);

static d5_status node_proto(d5__arena *a, const d5_network *net, int32_t index,
                            const d5_node_info *n, Onnx__NodeProto **out)
{
    Onnx__NodeProto *p = pb_new(a, &onnx__node_proto__descriptor);
    if (!p) return D5_ERR_NOMEM;
    p->name = (char *)n->name;
    p->op_type = (char *)n->op_type;
    if (n->domain && n->domain[0]) p->domain = (char *)n->domain;
    p->n_input = (size_t)n->ninputs;
    p->input = (char **)n->inputs;
    p->n_output = (size_t)n->noutputs;
    p->output = (char **)n->outputs;
    int32_t count = n->attrs ? n->attrs->count : 0;
    if (count + n->ngraphs > 0) {
        p->attribute = d5__arena_array(a, (size_t)(count + n->ngraphs), sizeof *p->attribute);
        if (!p->attribute) return D5_ERR_NOMEM;
    }
    int optional = strcmp(n->op_type, "Optional") == 0 && !(n->domain && n->domain[0]);
    for (int32_t k = 0; k < count; k++) {
        const d5_attr *at = &n->attrs->items[k];
        if (strcmp(at->name, D5_ATTR_OPSET) == 0) continue; /* the executor's, not the model's */
        d5_status s = attr_proto(a, at, n->name, &p->attribute[p->n_attribute]);
        if (s == D5_OK && optional && at->type == D5_ATTR_STRING && strcmp(at->name, "type") == 0) {
            Onnx__AttributeProto *t = p->attribute[p->n_attribute];
            t->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
            t->has_s = 0;
            s = type_attr_proto(a, at->s ? at->s : "", &t->tp);
        }
        if (s != D5_OK) return s;
        p->n_attribute++;
    }
    /* Subgraphs: GRAPH attributes. */
    for (int32_t k = 0; k < n->ngraphs; k++) {
        const char *name;
        const d5_network *sub = d5_network_node_graph_at(net, index, k, &name);
        Onnx__AttributeProto *at = pb_new(a, &onnx__attribute_proto__descriptor);
        Onnx__GraphProto *g = pb_new(a, &onnx__graph_proto__descriptor);
        if (!at || !g) return D5_ERR_NOMEM;
        at->name = (char *)name;
        at->has_type = 1;
        at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        at->g = g;
        d5_status s = graph_proto(sub, a, g);
        if (s != D5_OK) return s;
        p->attribute[p->n_attribute++] = at;
    }
    *out = p;
    return D5_OK;
}

/* ---- Opsets ---- */

static int has_domain(Onnx__OperatorSetIdProto **ops, size_t n, const char *domain)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ops[i]->domain ? ops[i]->domain : "", domain) == 0) return 1;
    return 0;
}

static d5_status add_opset(d5__arena *a, Onnx__ModelProto *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = pb_new(a, &onnx__operator_set_id_proto__descriptor);
    if (!o) return D5_ERR_NOMEM;
    o->domain = (char *)domain;
    o->has_version = 1;
    o->version = version;
    m->opset_import[m->n_opset_import++] = o;
    return D5_OK;
}

/* The network's opsets, and for a domain that a node uses without the network
 * naming it the version the network assumes (D5_DEFAULT_OPSET for the
 * default domain, 1 for others). */
static d5_status opsets(const d5_network *net, d5__arena *a, Onnx__ModelProto *m)
{
    int32_t nops = d5_network_opset_count(net), nnodes = d5_network_node_count(net);
    m->opset_import =
        d5__arena_array(a, (size_t)nops + (size_t)nnodes + 1, sizeof *m->opset_import);
    if (!m->opset_import) return D5_ERR_NOMEM;
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < nops; i++) {
        const char *domain;
        int64_t version;
        d5_network_opset_at(net, i, &domain, &version);
        s = add_opset(a, m, domain, version);
    }
    for (int32_t i = 0; s == D5_OK && i < nnodes; i++) {
        d5_node_info n;
        d5_network_node_at(net, i, &n);
        const char *domain = n.domain ? n.domain : "";
        int64_t version = d5_network_opset(net, domain);
        if (!has_domain(m->opset_import, m->n_opset_import, domain))
            s = add_opset(a, m, domain, version > 0 ? version : 1);
    }
    return s;
}

/* ---- The graph ---- */

static d5_status graph_proto(const d5_network *net, d5__arena *a, Onnx__GraphProto *g)
{
    g->name = (char *)d5_network_name(net);
    int32_t nnodes = d5_network_node_count(net), nvalues = d5_network_value_count(net);
    int32_t nin = d5_network_input_count(net), nout = d5_network_output_count(net);
    /* Nodes in topological order, which ONNX requires; as they are when the
     * graph does not check (the file then shows the problem). */
    int32_t *order = d5__arena_array(a, (size_t)nnodes + 1, sizeof *order);
    g->node = d5__arena_array(a, (size_t)nnodes + 1, sizeof *g->node);
    g->initializer = d5__arena_array(a, (size_t)nvalues + 1, sizeof *g->initializer);
    g->value_info = d5__arena_array(a, (size_t)nvalues + 1, sizeof *g->value_info);
    g->input = d5__arena_array(a, (size_t)nin + 1, sizeof *g->input);
    g->output = d5__arena_array(a, (size_t)nout + 1, sizeof *g->output);
    if (!order || !g->node || !g->initializer || !g->value_info || !g->input || !g->output)
        return D5_ERR_NOMEM;
    d5_status s = d5_network_check(net, order);
    if (s == D5_ERR_NOMEM) return s;
    if (s != D5_OK)
        for (int32_t i = 0; i < nnodes; i++) order[i] = i;
    s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < nnodes; i++) {
        d5_node_info n;
        d5_network_node_at(net, order[i], &n);
        s = node_proto(a, net, order[i], &n, &g->node[g->n_node++]);
    }
    for (int32_t i = 0; s == D5_OK && i < nvalues; i++) {
        d5_value_info v;
        d5_network_value_at(net, i, &v);
        if (v.kind == D5_VALUE_INITIALIZER) {
            Onnx__TensorProto *tp = pb_new(a, &onnx__tensor_proto__descriptor);
            if (!tp) return D5_ERR_NOMEM;
            s = d5__onnx_tensor_to_proto(&v.desc, v.data, v.name, a, tp);
            g->initializer[g->n_initializer++] = tp;
        } else if (v.kind == D5_VALUE_INTERMEDIATE && !v.is_output &&
                   d5__onnx_type_of((d5_dtype)v.desc.dtype) != 0) {
            s = value_proto(a, &v, &g->value_info[g->n_value_info++]);
        }
    }
    for (int32_t i = 0; s == D5_OK && i < nin; i++)
        s = named_value_proto(net, a, d5_network_input_name(net, i), &g->input[g->n_input++]);
    for (int32_t i = 0; s == D5_OK && i < nout; i++)
        s = named_value_proto(net, a, d5_network_output_name(net, i), &g->output[g->n_output++]);
    return s;
}

static d5_status save(const d5_network *net, void **data, size_t *size)
{
    d5__arena a = {NULL};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto *g = pb_new(&a, &onnx__graph_proto__descriptor);
    d5_status s = g ? D5_OK : D5_ERR_NOMEM;
    m.has_ir_version = 1;
    m.ir_version = D5__ONNX_IR_VERSION;
    m.producer_name = "d5";
    m.producer_version = (char *)d5_version();
    m.graph = g;
    if (s == D5_OK) s = opsets(net, &a, &m);
    if (s == D5_OK) s = graph_proto(net, &a, g);
    if (s == D5_OK) {
        size_t n = onnx__model_proto__get_packed_size(&m);
        uint8_t *buf = NULL;
        if (n > D5__ONNX_MAX_MESSAGE)
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "the model needs %zu bytes, more than protobuf's 2 GiB limit", n);
        else if (!(buf = d5_alloc(n ? n : 1, "ONNX model")))
            s = D5_ERR_NOMEM;
        else if (onnx__model_proto__pack(&m, buf) != n)
            s = d5_error(D5_ERR_INVALID, "protobuf packing gave an unexpected size");
        if (s == D5_OK) {
            *data = buf;
            *size = n;
        } else {
            d5_free(buf);
        }
    }
    d5__arena_free(&a);
    return s;
}

d5_status d5_onnx_save_buffer(const d5_network *net, void **data, size_t *size)
{
    if (!net || !data || !size)
        return d5_error(D5_ERR_INVALID, "d5_onnx_save_buffer: NULL argument");
    return save(net, data, size);
}

d5_status d5_onnx_save(const d5_network *net, const char *path)
{
    if (!net || !path) return d5_error(D5_ERR_INVALID, "d5_onnx_save: NULL argument");
    void *data = NULL;
    size_t size = 0;
    d5_status s = save(net, &data, &size);
    if (s != D5_OK) return d5__onnx_prefix(s, path);
    s = d5_file_write_atomic(path, data, size);
    d5_free(data);
    return s;
}
