/* Constant (ONNX opset 13): no inputs; the output is the value of the one
 * attribute set among value (a TENSOR: its data type and shape), value_float
 * (a float32 scalar), value_floats (a 1-d float32 tensor), value_int (an int64
 * scalar) and value_ints (a 1-d int64 tensor). sparse_value, value_string and
 * value_strings are not supported: d5 has no sparse or string tensors.
 * https://onnx.ai/onnx/operators/onnx__Constant.html */
#include "util.h"

#include <string.h>

/* The values, copied at create: the attributes are not kept. */
typedef struct constant {
    int64_t n;
    double v[];
} constant;

static d5_status new_state(int64_t n, void **state)
{
    constant *c = d5_alloc(sizeof *c + (size_t)(n ? n : 1) * sizeof(double), "Constant");
    if (!c) return D5_ERR_NOMEM;
    c->n = n;
    *state = c;
    return D5_OK;
}

/* value: a tensor of any shape. */
static d5_status from_tensor(const d5_attr *a, d5_tensor_desc *out, void **state)
{
    const d5_tensor *t = a->tensor;
    if (a->type != D5_ATTR_TENSOR || !t)
        return d5_error(D5_ERR_INVALID, "Constant: attribute 'value' must be a tensor");
    d5_dtype dt = (d5_dtype)t->desc.dtype;
    if (d5_dtype_size(dt) == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "Constant: attribute 'value' has data type %s",
                        d5_dtype_name(dt));
    int64_t n = d5_tensor_desc_numel(&t->desc);
    if (n > 0 && !t->data)
        return d5_error(D5_ERR_INVALID, "Constant: attribute 'value' has no data");
    d5_status s = new_state(n, state);
    if (s != D5_OK) return s;
    constant *c = *state;
    s = d5_convert(t->data, dt, c->v, D5_F64, (size_t)n);
    if (s != D5_OK) return s; /* the wrapper frees *state */
    *out = t->desc;
    out->layout = D5_LAYOUT_ROW_MAJOR;
    return D5_OK;
}

/* value_float, value_floats, value_int, value_ints. */
static d5_status from_numbers(const d5_attr *a, d5_tensor_desc *out, void **state)
{
    int floats = strncmp(a->name, "value_float", 11) == 0;
    int list = a->name[strlen(a->name) - 1] == 's';
    int32_t want =
        list ? (floats ? D5_ATTR_FLOATS : D5_ATTR_INTS) : (floats ? D5_ATTR_FLOAT : D5_ATTR_INT);
    if (a->type != want)
        return d5_error(D5_ERR_INVALID, "Constant: attribute '%s' must be %s", a->name,
                        list ? (floats ? "a list of floats" : "a list of ints")
                             : (floats ? "a float" : "an int"));
    int64_t n = list ? a->count : 1;
    d5_status s = new_state(n, state);
    if (s != D5_OK) return s;
    constant *c = *state;
    for (int64_t i = 0; i < n; i++)
        c->v[i] =
            list ? (floats ? a->floats[i] : (double)a->ints[i]) : (floats ? a->f : (double)a->i);
    out->dtype = floats ? D5_F32 : D5_I64;
    out->ndim = list ? 1 : 0;
    out->shape[0] = list ? n : 0;
    return D5_OK;
}

static d5_status constant_create(const d5_op_create_args *args, void **state)
{
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    static const char *const unsupported[] = {"sparse_value", "value_string", "value_strings"};
    for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
        if (d5_attrs_find(attrs, unsupported[k]))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "Constant: attribute '%s' is not supported (d5 has no sparse or "
                            "string tensors)",
                            unsupported[k]);
    static const char *const names[] = {"value", "value_float", "value_floats", "value_int",
                                        "value_ints"};
    const d5_attr *found = NULL;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const d5_attr *a = d5_attrs_find(attrs, names[k]);
        if (!a) continue;
        if (found)
            return d5_error(D5_ERR_INVALID,
                            "Constant: attributes '%s' and '%s' are both set, expected exactly "
                            "one",
                            found->name, a->name);
        found = a;
    }
    if (!found)
        return d5_error(D5_ERR_INVALID, "Constant: none of the attributes value, value_float, "
                                        "value_floats, value_int, value_ints is set");
    if (strcmp(found->name, "value") == 0) return from_tensor(found, &out[0], state);
    return from_numbers(found, &out[0], state);
}

static d5_status constant_forward(void *state, const d5_ref_call *call)
{
    d5_rt *out = call->outputs;
    const constant *c = state;
    for (int64_t i = 0; i < c->n; i++) out[0].data[i] = c->v[i];
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Constant, 0, 0, 1, 1, constant_create, constant_forward, NULL, NULL);
